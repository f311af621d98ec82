"""The daemon: `Service`, the one async composition root that owns every connection
and task, and the jobs it runs (scheduler, timed actions, claim timers, retention). May
import every package but `cli`; nothing of bonusd imports it but `cli`."""
