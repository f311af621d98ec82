"""MQTT ingest against a real Mosquitto: limits, outages, shared subscriptions, reconnects, the broker's configuration and accounts."""
