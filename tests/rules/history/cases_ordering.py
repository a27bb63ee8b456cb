"""Cases of ``auditor/rules/history/ordering.py`` (KA815): captures whose dates (file times or names) do
not order their content, next to a log dir restored from a backup and captures with trustworthy times."""

from __future__ import annotations

from tests.rules.harness import fire, silent
from tests.rules.history.builders import DAY, TOPIC_ID, TP, Capture, Story

TP2 = ("ule", 1)


def copied(broker: int, ms: int, hw: int, source: str = "mtime", **kw) -> Capture:
    """A capture of ``ule-0`` and ``ule-1`` (the same HW, one epoch) dated ``ms`` after T0."""
    return Capture(
        broker,
        0,
        hw={TP: hw, TP2: hw},
        rp={TP: hw, TP2: hw},
        epochs={TP: [(0, 0)], TP2: [(0, 0)]},
        topic_ids={TP: TOPIC_ID, TP2: TOPIC_ID},
        time_source=source,
        ms=ms,
        **kw,
    )


@fire("KA815")
@silent("KA801", "KA802", "KA803", "KA805")
def copies_dated_by_mtime_in_the_wrong_order(tmp, mp) -> Story:
    """The user's case: two nights' captures of brokers 1-3 copied without their times, the later night's
    first: their mtimes are 38 ms apart and the later-dated copy holds the older state (HW 0, the topic
    just created): nothing went back, the order did."""
    return Story([copied(b, 0, 1500) for b in (1, 2, 3)] + [copied(b, 38, 0) for b in (1, 2, 3)])


@fire("KA815", "KA801")
def copies_dated_by_mtime_with_values_both_ways(tmp, mp) -> Story:
    """Captures dated by mtimes a day apart: ule-0 went back while ule-1 went forward. Whichever order is
    right, one of them truncated: the regression stands beside the warning."""
    caps = [copied(1, 0, 1500)]
    later = copied(1, DAY, 0)
    later.hw[TP2] = later.rp[TP2] = 3000
    return Story([*caps, later])


@fire("KA815")
@silent("KA801", "KA803")
def named_captures_whose_content_is_older(tmp, mp) -> Story:
    """Times from the archive names a day apart, but every partition of broker 1 is lower at the later one,
    nothing went forward, no new leader epoch and no restart: the names are swapped."""
    return Story([copied(1, 0, 3000, "name"), copied(1, DAY, 1000, "name")])


@fire("KA801", "KA802")
@silent("KA815")
def log_dir_restored_from_a_backup(tmp, mp) -> Story:
    """Broker 1 was stopped (.kafka_cleanshutdown) and its log dir restored from an older backup: every
    partition went back, with a restart in between: a regression, not a wrong order."""
    first = copied(1, 0, 3000, "name", clean=False)
    first.log_start = {TP: 900, TP2: 900}
    restored = copied(1, DAY, 1000, "name", clean=True)
    restored.log_start = {TP: 500, TP2: 500}
    return Story([first, restored])


@silent("KA815")
def nightly_captures_with_trustworthy_times(tmp, mp) -> Story:
    """Archive-member times and names, a day apart, the content growing: nothing to doubt."""
    return Story([copied(1, d * DAY, 1000 * (d + 1), "archive" if d % 2 else "name") for d in range(3)])
