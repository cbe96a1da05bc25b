"""Numbers rendered into findings text: formats and the word that follows the sign."""

import math

from lessons.core.prose import direction, num, pct, share, signed


def test_formats():
    assert pct(0.8333) == "83%" and pct(0.8333, 1) == "83.3%" and pct(None) == "n/a" and pct(math.nan) == "n/a"
    assert num(0.8333) == "0.83" and num(2, 1) == "2.0"
    assert signed(0.045) == "+0.045" and signed(-0.02) == "−0.020" and signed(0.0001) == "±0.000"
    assert share(5, 6) == "5/6"


def test_the_word_follows_the_measured_sign():
    assert direction(0.1, "helps", "hurts", "changes nothing") == "helps"
    assert direction(-0.1, "helps", "hurts", "changes nothing") == "hurts"
    assert direction(0.01, "helps", "hurts", "changes nothing", tolerance=0.02) == "changes nothing"
    assert direction(None, "helps", "hurts", "changes nothing") == "changes nothing"
