"""MQTT ingest: the broker connection, the bounded inbox and the consumer that commits
telemetry batches into the floor store exactly once, and the broker accounts of a secure
Mosquitto. The only package that imports aiomqtt and paho."""
