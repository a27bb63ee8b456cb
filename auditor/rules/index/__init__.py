"""KA2xx (KA20x-KA22x): a segment's offset index, time index and transaction index against its batches
(spec §7, §8, §9, §17.4).

Benign shapes that stay silent: a zero-filled (preallocated) tail of the active segment's indexes, offset
index entries of multi-batch follower appends (the offset of the last batch of the append, the position of
the first), and empty indexes of segments with a single append. Entries pointing past the data of a segment
that recovery will rebuild are warnings (a crash artefact Kafka repairs); elsewhere they are errors.

``offset_index`` holds the checks of the ``.index`` (KA20x), ``time_index`` those of the ``.timeindex``
(KA21x), ``txn_index`` those of the ``.txnindex`` against the transaction markers (KA22x); ``entries`` the
findings at index entries they share.
"""
