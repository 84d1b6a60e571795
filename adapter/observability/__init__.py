"""What operators see of the adapter at work: logs and a request id per search (telemetry),
OpenTelemetry spans (tracing), Prometheus metrics (metrics). Each is a no-op until the application
configures it."""
