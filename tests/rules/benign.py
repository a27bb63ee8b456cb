"""The clean log dirs every scan rule must leave silent.

``baseline`` (``builder.standard``: clean shutdown, checkpoints at the log end offset, KRaft metadata with
the topic) and ``txn_baseline`` (committed and aborted transactions with their markers) are silent cases of
the rules of :data:`BASELINE_CODES`; the other benign shapes Kafka produces are in the case files of the
rules a naive checker would fire (preallocated active indexes, trailing leader-epoch entries at the log end
offset, ``.deleted`` segments).
"""

from __future__ import annotations

from tests.rules.builder import built, txn_part
from tests.rules.harness import silent

BASELINE_CODES = [
    "KA001",
    "KA002",
    "KA101",
    "KA102",
    "KA103",
    "KA104",
    "KA105",
    "KA106",
    "KA107",
    "KA108",
    "KA109",
    "KA110",
    "KA201",
    "KA202",
    "KA203",
    "KA204",
    "KA205",
    "KA206",
    "KA207",
    "KA208",
    "KA211",
    "KA212",
    "KA213",
    "KA214",
    "KA215",
    "KA216",
    "KA221",
    "KA222",
    "KA223",
    "KA231",
    "KA232",
    "KA233",
    "KA301",
    "KA302",
    "KA303",
    "KA304",
    "KA305",
    "KA306",
    "KA307",
    "KA311",
    "KA312",
    "KA313",
    "KA314",
    "KA401",
    "KA402",
    "KA403",
    "KA404",
    "KA405",
    "KA406",
    "KA407",
    "KA408",
    "KA501",
    "KA502",
    "KA503",
    "KA504",
    "KA505",
    "KA506",
    "KA507",
    "KA508",
    "KA509",
    "KA510",
    "KA511",
    "KA512",
    "KA513",
    "KA514",
]


@silent(*BASELINE_CODES)
def baseline(tmp, mp):
    return [built(tmp)[0].root]


@silent(*[c for c in BASELINE_CODES if c not in ("KA505",)])
def txn_baseline(tmp, mp):
    return [txn_part(tmp)[0].root]
