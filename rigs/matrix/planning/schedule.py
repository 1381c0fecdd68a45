"""The order a run measures its cells in: every (cell, repetition) interleaved in seeded rounds, so that host
drift during a run spreads over every cell as noise instead of showing up as an effect."""

import random


def interleaved_order(cells, repetitions, seed, repetitions_of=None):
    """Every (cell, repetition) once, in a seeded random order, so drift shows up as noise, not as an effect.

    Repetition r of every cell comes before repetition r+1 of any cell (rounds), and the order inside each
    round is shuffled, so an interrupted run still has comparable coverage of all cells. repetitions_of:
    a cell's own count (known-answer cells), at most `repetitions`.
    """
    rng = random.Random(seed)
    order = []
    for rep in range(repetitions):
        round_cells = [c for c in cells if repetitions_of is None or rep < repetitions_of(c)]
        rng.shuffle(round_cells)
        order.extend((cell, rep) for cell in round_cells)
    return order
