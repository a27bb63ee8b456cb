"""Where things are: log directories, brokers, partition directories, segments and file kinds, found once
for every command (``scan``, ``extract``, ``audit``, ``ingest``)."""
