"""Time: the `Clock` every time-dependent part takes, gaming-day arithmetic, and the
shared simulated clock that lets a floor simulator and every daemon of a site run on one
accelerated time. Imports nothing of bonusd but `errors` and `settings`."""
