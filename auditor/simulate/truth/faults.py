"""The anomalies in the files as written (torn tails, bit flips, index entries and checkpoints beyond the
log), each with its file and byte position."""

from __future__ import annotations

from auditor.simulate.cluster import Cluster
from auditor.simulate.model import TP, tp_fields
from auditor.simulate.writer import broker_dir_name, partition_dir_name
from parsers.dirfiles import segment_file_name


def collect_faults(cluster: Cluster) -> list[dict]:
    """Every anomaly present in the final files, with its file (relative to the output dir) and byte
    position: torn tails, CRC flips, index entries beyond the log, checkpoints beyond the log end."""
    faults: list[dict] = []
    flips = {
        (f["broker"], f["topic"], f["partition"], f["batch_position"], f["segment_base_offset"]): f
        for f in cluster.faults
        if f["kind"] == "crc-flip"
    }
    for b, br in sorted(cluster.brokers.items()):
        root = broker_dir_name(b)
        for tp, rep in sorted(br.replicas.items()):
            pdir = f"{root}/{partition_dir_name(*tp)}"
            where = {"broker": b, **tp_fields(tp)}
            leo = rep.log.leo
            for seg in rep.log.segments:
                log_name = f"{pdir}/{segment_file_name(seg.base_offset, '.log')}"
                for i in sorted(seg.damaged):
                    f = flips.get((b, tp[0], tp[1], seg.positions[i], seg.base_offset), {})
                    faults.append(
                        {
                            "kind": "crc-flip",
                            "file": log_name,
                            "position": f.get("position"),
                            "bit": f.get("bit"),
                            "batch_position": seg.positions[i],
                            "batch_base_offset": seg.batches[i].base_offset,
                            "batch_last_offset": seg.batches[i].last_offset,
                            **where,
                        }
                    )
                if seg.tail:
                    faults.append(
                        {
                            "kind": "torn-tail",
                            "file": log_name,
                            "position": seg.size,
                            "length": len(seg.tail),
                            **where,
                        }
                    )
                for k, (off, pos) in enumerate(seg.index):
                    if pos >= seg.size or off >= seg.next_offset:
                        faults.append(
                            {
                                "kind": "index-entry-beyond-log",
                                "file": f"{pdir}/{segment_file_name(seg.base_offset, '.index')}",
                                "position": 8 * k,
                                "offset": off,
                                "log_position": pos,
                                "log_size": seg.size,
                                **where,
                            }
                        )
                for k, (ts, off) in enumerate(seg.time_index):
                    if off >= seg.next_offset:
                        faults.append(
                            {
                                "kind": "time-index-entry-beyond-log",
                                "file": f"{pdir}/{segment_file_name(seg.base_offset, '.timeindex')}",
                                "position": 12 * k,
                                "offset": off,
                                "timestamp": ts,
                                **where,
                            }
                        )
            for name, values, kind in (
                ("replication-offset-checkpoint", br.ckpt_hw, "hw-checkpoint-beyond-log"),
                ("recovery-point-offset-checkpoint", br.ckpt_recovery, "recovery-point-beyond-log"),
            ):
                if values and values.get(tp, 0) > leo:
                    faults.append(
                        {
                            "kind": kind,
                            "file": f"{root}/{name}",
                            "position": _ckpt_line_pos(values, tp),
                            "value": values[tp],
                            "log_end_offset": leo,
                            **where,
                        }
                    )
            line_pos = len(f"0\n{len(rep.disk_epoch_cache)}\n")
            for e, s in rep.disk_epoch_cache:
                pos, line_pos = line_pos, line_pos + len(f"{e} {s}\n")
                if s > leo:
                    faults.append(
                        {
                            "kind": "epoch-entry-beyond-log",
                            "file": f"{pdir}/leader-epoch-checkpoint",
                            "epoch": e,
                            "start_offset": s,
                            "log_end_offset": leo,
                            "position": pos,
                            **where,
                        }
                    )
            for off in sorted(rep.log.snapshots):
                if off > leo:
                    faults.append(
                        {
                            "kind": "snapshot-beyond-log",
                            "file": f"{pdir}/{segment_file_name(off, '.snapshot')}",
                            "position": 0,
                            "snapshot_offset": off,
                            "log_end_offset": leo,
                            **where,
                        }
                    )
    return faults


def _ckpt_line_pos(values: dict[TP, int], tp: TP) -> int:
    """Byte position of ``tp``'s line in an offset checkpoint written by ``writer._offset_checkpoint``."""
    pos = len(f"0\n{len(values)}\n")
    for key, off in sorted(values.items()):
        if key == tp:
            return pos
        pos += len(f"{key[0]} {key[1]} {off}\n")
    return pos
