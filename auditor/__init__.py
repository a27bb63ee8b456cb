"""kafka-auditor: offline forensic and consistency auditor for Apache Kafka log directories."""

__version__ = "0.1.0"
