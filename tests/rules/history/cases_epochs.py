"""Cases of ``auditor/rules/history/epochs.py`` (KA804-KA805): replicas that disagree on where an epoch
starts (an epoch fork) and leader-epoch entries removed below the high watermark."""

from __future__ import annotations

from tests.rules.harness import fire, silent
from tests.rules.history.builders import Capture, Story, part


def unclean_election() -> list[Capture]:
    """The corpus run (unclean-leader-election, Kafka 4.0): broker 3 leads epoch 0 alone up to HW 1500 and
    dies; broker 1 (LEO 1000) is elected uncleanly (epoch 2) and writes 1000..1299; broker 3 rejoins,
    truncates to 1000 and re-fetches; after the controlled shutdown broker 3 holds epoch 3 at 1500."""
    before = [
        part(1, 0, 1300, [(0, 0), (2, 1000)], rp=1300),
        part(2, 0, 0, [(0, 0)], rp=0),
        part(3, 0, 1500, [(0, 0)], rp=881),
    ]
    after = [
        part(1, 1, 1500, [(0, 0), (2, 1000)], rp=1500, clean=True),
        part(2, 1, 1500, [(0, 0), (2, 1000)], rp=1500, clean=True),
        part(3, 1, 1500, [(0, 0), (2, 1000), (3, 1500)], rp=1500, clean=True),
    ]
    return before + after


@fire("KA804", "KA805")
@silent("KA801", "KA803", "KA806", "KA807", "KA808")
def corpus_unclean_election(tmp, mp) -> Story:
    return Story(unclean_election())


@fire("KA804")
@silent("KA805")
def replicas_disagree_on_an_epoch_start(tmp, mp) -> Story:
    """Brokers 1 and 2 both hold epoch 4, starting at 700 on one and at 650 on the other, below both HWs."""
    return Story([part(1, 0, 900, [(0, 0), (4, 700)]), part(2, 0, 900, [(0, 0), (3, 600), (4, 650)])])


@silent("KA804", "KA805")
def follower_without_the_new_epoch_yet(tmp, mp) -> Story:
    """A clean election: the new leader (broker 2) has epoch 5 at 2000; broker 1 has not fetched in epoch 5
    yet, so its HW is at most 2000: nothing committed differs."""
    return Story([part(1, 0, 2000, [(0, 0), (3, 1000)]), part(2, 0, 2100, [(0, 0), (3, 1000), (5, 2000)])])


@silent("KA804", "KA805")
def truncated_from_start_differently(tmp, mp) -> Story:
    """Retention moved each replica's log start to a different offset: the first entries differ (moved up
    by truncateFromStart), the lineage is the same."""
    return Story(
        [
            part(1, 0, 5000, [(3, 2500), (4, 4000)], log_start=2500),
            part(2, 0, 5000, [(2, 1200), (3, 2000), (4, 4000)], log_start=1200),
            part(1, 1, 6000, [(4, 4500)], log_start=4500),
            part(2, 1, 6000, [(3, 3000), (4, 4000)], log_start=3000),
        ]
    )


@fire("KA805")
@silent("KA804")
def entry_removed_below_hw(tmp, mp) -> Story:
    """Broker 1's cache lost epoch 2 (starting at 400, below its HW 900) between two captures."""
    return Story([part(1, 0, 900, [(0, 0), (2, 400), (3, 800)]), part(1, 1, 1200, [(0, 0), (3, 800)])])


@silent("KA805")
def uncommitted_tail_truncated(tmp, mp) -> Story:
    """Broker 1 led epoch 3 from 800 without committing anything in it (HW 800): it lost leadership,
    truncated its uncommitted tail and took epoch 4 at 800 from the new leader (KIP-101)."""
    return Story([part(1, 0, 800, [(0, 0), (3, 800)]), part(1, 1, 1000, [(0, 0), (4, 800)])])
