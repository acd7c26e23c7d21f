"""The shared scorers against examples checked by hand (the expected numbers are worked out in the comments).
Agreement with each benchmark's official scoring code is `test_bench_official_agreement.py`."""

from __future__ import annotations

import datetime as dt

import pytest

from skillopt_lib.envs import scoring as s


def test_squad_normalization_drops_case_punctuation_articles_and_extra_spaces() -> None:
    assert s.normalize_answer("The  Titanic!") == "titanic"
    assert s.normalize_answer("An apple, a day") == "apple day"
    assert s.normalize_answer("theory") == "theory"  # 'the' only as a word


def test_exact_match_takes_the_best_gold_answer() -> None:
    assert s.exact_match("the Titanic", ["RMS Titanic", "Titanic"]) == 1.0
    assert s.exact_match("Titanic II", ["Titanic"]) == 0.0


def test_token_f1_worked_examples() -> None:
    # pred {neil, alden, armstrong} vs gold {neil, armstrong}: P = 2/3, R = 1, F1 = 2*(2/3)/(5/3) = 0.8
    assert s.token_f1("Neil Alden Armstrong", ["Neil Armstrong"]) == pytest.approx(0.8)
    # no overlap with the first gold, full overlap with the second
    assert s.token_f1("Budapest", ["Vienna", "Budapest"]) == 1.0
    # SQuAD v1.1 (the metric published for SearchQA): nothing in common is 0, even two empty answers
    assert s.token_f1("", [""]) == 0.0
    assert s.token_f1("Paris", [""]) == 0.0


def test_levenshtein() -> None:
    assert s.levenshtein("kitten", "sitting") == 3
    assert s.levenshtein("", "abc") == 3
    assert s.levenshtein("same", "same") == 0


def test_anls_worked_examples() -> None:
    # one substitution in six characters: 1 - 1/6
    assert s.anls("4471-8", ["4471-B"]) == pytest.approx(5 / 6)
    # case and surrounding/repeated spaces do not count
    assert s.anls("  Dr.  R. ALVAREZ ", ["Dr. R. Alvarez"]) == 1.0
    # a similarity of exactly 0.5 is not below the threshold: it counts
    assert s.anls("abcd", ["abxy"]) == 0.5
    assert s.anls("abcd", ["axyz"]) == 0.0
    # the best of several gold answers counts
    assert s.anls("1150", ["1,150", "1150"]) == 1.0
    assert s.anls("Total", ["$1,284.50"]) == 0.0


def test_numeric_token_f1_treats_thousands_separators_as_the_same_token() -> None:
    assert s.numeric_token_f1("1,234 dollars", ["1234"]) == 1.0
    # pred {1234, series, e} vs gold {1234}: P = 1/3, R = 1, F1 = 0.5
    assert s.numeric_token_f1("1234 series e", ["1,234"]) == pytest.approx(0.5)


def test_cells_follow_the_official_spreadsheetbench_value_rules() -> None:
    assert s.cells_match(3.14159, 3.14)
    assert s.cells_match(1, 1.0)
    assert s.cells_match(1.004, 1.0)
    assert not s.cells_match(1.006, 1.0)  # rounds to 1.01
    assert s.cells_match(None, "") and s.cells_match(None, None)
    assert s.cells_match(-0.001, 0)
    assert not s.cells_match("abc", "abc ")  # text is compared exactly
    # the edge cases where the official evaluation differs from a stricter reading
    assert s.cells_match(True, 1)  # a boolean is a number there
    assert s.cells_match(False, 0.0)
    assert s.cells_match(dt.datetime(2024, 1, 2), 45293)  # a date and its Excel serial number
    assert s.cells_match(dt.datetime(2024, 1, 2, 3, 4), 45293)  # rounded to the day
    assert not s.cells_match(dt.datetime(2024, 1, 2, 13, 0), 45293)  # past noon rounds up
    assert s.cells_match(dt.time(3, 4, 5), "03:04")  # times compare to the minute, as text
    assert s.cells_match("12.50", 12.5) and s.cells_match(" 7 ", 7)  # text float() reads is a number
    assert not s.cells_match("1,234", 1234)  # float() does not read thousands separators
    assert not s.cells_match("TRUE", True)  # text is not a boolean
    assert not s.cells_match(0, "")  # zero is not empty
    assert s.normalize_cell(dt.datetime(1900, 1, 1)) == 2.0


def test_answer_positions_and_ranges() -> None:
    assert s.parse_answer_position("'Sheet 1'!A1:C3") == [("Sheet 1", "A1:C3")]
    assert s.parse_answer_position("H3:H5") == [(None, "H3:H5")]
    assert s.parse_answer_position("Sheet1!D2,Sheet2!A1") == [("Sheet1", "D2"), ("Sheet2", "A1")]
    assert s.parse_answer_position("'a,b'!A1") == [("a,b", "A1")]
    assert s.range_cells("A1:B2") == ["A1", "B1", "A2", "B2"]
    assert s.range_cells("$C$7") == ["C7"]
    assert s.column_index("AA") == 27 and s.column_letters(27) == "AA" and s.column_letters(702) == "ZZ"
    with pytest.raises(ValueError):
        s.range_cells("not a range")


def test_final_answer_extraction() -> None:
    assert s.extract_final_answer("Let me think.\nAnswer: Paris") == "Paris"
    assert s.extract_final_answer("<answer>42</answer> and more text") == "42"
    assert s.extract_final_answer("**Final answer:** Rome") == "Rome"
    assert s.extract_final_answer("no marker\nlast line") == "last line"
    assert s.extract_final_answer("") == ""


def test_choice_label_extraction() -> None:
    labels = list("ABCDE")
    assert s.extract_choice_label("reasoning...\nAnswer: (C)", labels) == "C"
    assert s.extract_choice_label("Answer: \\boxed{B} since (D) fails", labels) == "B"
    assert s.extract_choice_label("Answer: F", labels) is None
    # a record with three choices reads only its own labels
    assert s.extract_choice_label("Answer: C, not D", list("ABC")) == "C"
    assert s.extract_choice_label("no letter at all", labels) is None
