"""Evaluation statistics against published and hand-computed values."""

import math

import pytest

from rlvr.evaluation.stats import mcnemar_exact, mean_pass_at_k, paired_counts, pass_at_k, wilson_interval


def test_wilson_interval_matches_newcombe_1998_example():
    # Newcombe (1998), Statistics in Medicine 17:857, example: 81/263 -> 0.2553 to 0.3662.
    low, high = wilson_interval(81, 263)
    assert low == pytest.approx(0.2553, abs=5e-5)
    assert high == pytest.approx(0.3662, abs=5e-5)


def test_wilson_interval_for_zero_successes_starts_at_zero():
    low, high = wilson_interval(0, 10)
    assert low == 0.0
    assert high == pytest.approx(0.2775, abs=5e-5)


def test_wilson_interval_is_symmetric_around_one_half():
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(0.2366, abs=5e-5)
    assert low + high == pytest.approx(1.0)


def test_wilson_interval_without_items_is_uninformative():
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_pass_at_1_is_the_fraction_correct():
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)


def test_pass_at_k_uses_the_unbiased_estimator():
    # 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(8, 1, 4) == pytest.approx(1 - math.comb(7, 4) / math.comb(8, 4))


def test_pass_at_k_is_one_when_fewer_wrong_samples_than_k():
    assert pass_at_k(4, 3, 2) == 1.0


def test_pass_at_k_is_zero_without_correct_samples():
    assert pass_at_k(4, 0, 4) == 0.0


def test_pass_at_k_rejects_k_above_n():
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_mean_pass_at_k_averages_items():
    assert mean_pass_at_k([0, 4], 4, 1) == pytest.approx(0.5)


def test_mcnemar_exact_p_values():
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 1024)
    assert mcnemar_exact(9, 1) == mcnemar_exact(1, 9)


def test_mcnemar_exact_is_one_without_discordant_pairs_or_when_balanced():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 3) == 1.0


def test_paired_counts_split_items_into_the_four_cells():
    first = [True, True, False, False, True]
    second = [True, False, True, False, False]
    assert paired_counts(first, second) == (1, 2, 1, 1)


@pytest.mark.parametrize("n", range(1, 61))
def test_wilson_interval_holds_the_estimate_inside_zero_one_at_none_and_all_correct(n):
    for successes in (0, n):
        low, high = wilson_interval(successes, n)
        assert 0.0 <= low <= successes / n <= high <= 1.0
    assert wilson_interval(0, n)[0] == 0.0 and wilson_interval(n, n)[1] == 1.0


def test_mcnemar_exact_matches_the_binomial_sum():
    for first, second in ((2, 11), (7, 3), (0, 1), (20, 25)):
        n = first + second
        tail = sum(math.comb(n, i) for i in range(min(first, second) + 1)) / 2**n
        assert mcnemar_exact(first, second) == pytest.approx(min(1.0, 2 * tail))


def test_paired_difference_interval_reproduces_newcombes_worked_example():
    from rlvr.evaluation.stats import paired_difference_interval

    # Newcombe (1998), paired data example: 12 both, 9 only second... as (both, only first, only second, neither).
    low, high = paired_difference_interval(12, 2, 9, 21)
    assert round(low, 4) == 0.0112 and round(high, 4) == 0.2954


def test_paired_difference_interval_holds_the_difference_and_stays_in_range():
    from rlvr.evaluation.stats import paired_difference_interval

    assert paired_difference_interval(0, 0, 0, 0) == (-1.0, 1.0)
    low, high = paired_difference_interval(0, 0, 200, 0)
    assert low > 0.9 and high == 1.0
    low, high = paired_difference_interval(60, 10, 40, 90)
    assert low < 30 / 200 < high
