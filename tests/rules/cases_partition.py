"""Cases of ``auditor/rules/partition.py`` (KA401-KA408): high watermark, log start offset, recovery point
and cleaner checkpoint against the log, an unclean shutdown, a segment Kafka recovers at load (no offset
index), and a controller's log dir that never has a clean-shutdown marker."""

from __future__ import annotations

from pathlib import Path

from parsers.checkpoints import format_offset_checkpoint
from tests.rules.builder import LogDir, built, flip, standard, truncate
from tests.rules.harness import fire, silent


@silent("KA102", "KA103")
@fire("KA401")
def cut_at_boundary(tmp, mp):
    ld, p = built(tmp)
    w = p.written[-1]
    truncate(p.seg_path(1), w.position)
    return [ld.root]


def _offsets(tmp: Path, **kw) -> list[Path]:
    ld, p = standard(tmp / "broker-1")
    for k, v in kw.items():
        setattr(p, k, v)
    ld.write()
    return [ld.root]


@fire("KA401")
def hw_above(tmp, mp):
    return _offsets(tmp, hw=40)


@fire("KA402")
def hw_below_start(tmp, mp):
    return _offsets(tmp, hw=10, log_start=15)


@silent("KA402", "KA404", "KA401")
def log_start_moved(tmp, mp):
    return _offsets(tmp, hw=30, log_start=15)


@fire("KA403")
def rp_above(tmp, mp):
    return _offsets(tmp, recovery_point=45)


@fire("KA404")
def log_start_above(tmp, mp):
    return _offsets(tmp, log_start=50, hw=50)


@fire("KA405", "KA406")
def unclean(tmp, mp):
    ld, p = standard(tmp / "broker-1", clean=False)
    ld.write()
    return [ld.root]


@fire("KA406")
@silent("KA405")
def corrupt_segment_without_offset_index(tmp, mp):
    """After a clean shutdown, Kafka recovers at load the first segment, whose ``.index`` is missing
    (``LogLoader.loadSegmentFiles``), cutting it at its corrupt batch."""
    ld, p = built(tmp)
    p.seg_path(0, ".index").unlink()
    flip(p.seg_path(0), p.written[2].position + 70)
    return [ld.root]


@silent("KA406")
def corrupt_batch_after_a_clean_shutdown(tmp, mp):
    """With its offset index, a cleanly shut down segment is not re-read: nothing is recovered."""
    ld, p = built(tmp)
    flip(p.seg_path(0), p.written[2].position + 70)
    return [ld.root]


@silent("KA405", "KA406", "KA304")
def controller_only(tmp, mp):
    """A controller's log dir: only __cluster_metadata-0, never a .kafka_cleanshutdown."""
    ld = LogDir(tmp / "controller-100", node_id=100, clean=False)
    ld.write()
    for name in (
        "replication-offset-checkpoint",
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
    ):
        (ld.root / name).unlink()
    return [ld.root]


@fire("KA407")
def cleaner_beyond(tmp, mp):
    return _offsets(tmp, cleaner=50)


@silent("KA407")
def cleaner_inside(tmp, mp):
    return _offsets(tmp, cleaner=20)


@fire("KA408")
def hw_missing(tmp, mp):
    ld, p = standard(tmp / "broker-1")
    ld.checkpoint_override["replication-offset-checkpoint"] = format_offset_checkpoint([])
    ld.write()
    return [ld.root]
