"""The scorers against examples checked by hand (the expected numbers are worked out in the comments)."""

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
    assert s.token_f1("", [""]) == 1.0
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
    # distance exactly half the length is not below the 0.5 threshold: 0
    assert s.anls("abcd", ["abxy"]) == 0.0
    # the best of several gold answers counts
    assert s.anls("1150", ["1,150", "1150"]) == 1.0
    assert s.anls("Total", ["$1,284.50"]) == 0.0


def test_parse_numbers_reads_numbers_as_the_official_officeqa_scorer_does() -> None:
    assert s.parse_numbers("$1,234.5 million") == [1234.5]  # commas dropped, currency ignored
    assert s.parse_numbers("a loss of (1,200)") == [1200.0]  # parentheses are not a sign
    assert s.parse_numbers("-3.5% then 7") == [-3.5, 7.0]
    assert s.parse_numbers("\u22122.5") == [-2.5]  # a Unicode minus is a minus
    assert s.parse_numbers("no digits") == []


def test_officeqa_matches_any_non_year_number_like_the_official_scorer() -> None:
    # the two disagreements that motivated following the official rules
    assert s.numeric_exact_match("5.1 percent in 2023", ["5.1"]) == 1.0  # 2023 is a year: skipped
    assert s.numeric_exact_match("(3.2)", ["-3.2"]) == 0.0  # (3.2) is +3.2, 200% away from -3.2
    assert s.numeric_exact_match("The receipts were $5,668 million.", ["5,668"]) == 1.0
    assert s.numeric_exact_match("5668.0", ["5,668"]) == 1.0
    assert s.numeric_exact_match("5,669", ["5,668"]) == 0.0
    assert s.numeric_exact_match("15.4 percent", ["15.4%"]) == 1.0
    # any number of the prediction may be the answer, wherever it stands
    assert s.numeric_exact_match("From 1938 to 1940 it grew by 1,911", ["1,911"]) == 1.0
    assert s.numeric_exact_match("1,911 in 1940", ["1,911"]) == 1.0
    assert s.numeric_exact_match("it was 12 or 13", ["13"]) == 1.0
    # units are not applied: 543 million is 543, and 543000000 is another number
    assert s.numeric_exact_match("543", ["543 million"]) == 1.0
    assert s.numeric_exact_match("543,000,000", ["543 million"]) == 0.0
    # a relative tolerance when asked for: |1590 - 1589| / 1589 < 1%
    assert s.numeric_exact_match("1,590", ["1,589"], rel_tol=0.01) == 1.0
    assert s.numeric_exact_match("1,590", ["1,589"]) == 0.0


def test_officeqa_years_words_lists_and_text_follow_the_official_rules() -> None:
    # a year-like gold answer keeps years in the prediction
    assert s.numeric_exact_match("In 1977.", ["1977"]) == 1.0
    # a gold answer with words needs the words too, and then keeps years
    assert s.numeric_exact_match("March 1977", ["March 1977"]) == 1.0
    assert s.numeric_exact_match("April 1977", ["March 1977"]) == 0.0
    assert s.numeric_exact_match("1977", ["March 1977"]) == 0.0
    # several gold numbers: all must appear, years in the prediction skipped unless the gold has one
    assert s.numeric_exact_match("12.5 and 7.25 (as of 2020)", ["7.25, 12.5"]) == 1.0
    assert s.numeric_exact_match("12.5 only", ["7.25, 12.5"]) == 0.0
    # zero matches zero only
    assert s.numeric_exact_match("0", ["0"]) == 1.0 and s.numeric_exact_match("0.5", ["0"]) == 0.0
    # textual gold answers: contained in the prediction, parenthetical parts and case ignored
    assert s.numeric_exact_match("series e.", ["Series E"]) == 1.0
    assert s.numeric_exact_match("Treasury bills", ["Treasury bills (regular)"]) == 1.0
    # as in the official scorer, removing a parenthetical part inside the text leaves two spaces behind
    assert (
        s.numeric_exact_match("Old-Age Insurance Trust Fund", ["Old-Age Insurance (OASI) Trust Fund"]) == 0.0
    )
    assert s.numeric_exact_match("Series", ["Series E"]) == 0.0
    assert s.numeric_exact_match("", ["5"]) == 0.0


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
    assert s.extract_choice_label("Answer: B. Because the bound holds.", labels) == "B"
    assert s.extract_choice_label("I think the answer is D", labels) == "D"
    assert s.extract_choice_label("Answer: A or B", labels) is None
    assert s.extract_choice_label("Answer: F", labels) is None


def test_officeqa_reads_the_official_final_answer_tags_first() -> None:
    from skillopt_lib.envs.officeqa import officeqa_answer

    assert officeqa_answer("Working...\n<FINAL_ANSWER> 5,668 </FINAL_ANSWER>\nAnswer: 12") == "5,668"
    assert officeqa_answer("Working...\nAnswer: 12") == "12"
