"""The two verifiers: the strict training reward and the lenient reporting metrics."""

from __future__ import annotations

import dataclasses
import time
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mem_agent.agent import scoring
from mem_agent.agent.scoring import (
    OFFICIAL,
    STRICT_WINDOW_CHARS,
    ReportingRules,
    answer_region,
    exact_match,
    extract_boxed,
    normalize_answer,
    score_answer,
    strict_reward,
    substring_exact_match,
    token_f1,
)
from mem_agent.settings.config import MemAgentConfig

FOLDED = ReportingRules(fold_unicode=True)
GUARDED = ReportingRules(empty_guard=True)
BOX_FREE = st.text().filter(lambda s: "{" not in s and "}" not in s and "\\" not in s)


# --- extraction -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no box here", None),
        ("", None),
        ("\\boxed{Paris}", "Paris"),
        ("first \\boxed{A} then \\boxed{B}", "B"),
        ("\\boxed{\\text{a}{b}}", "\\text{a}{b}"),
        ("\\boxed{}", ""),
        ("\\boxed{Zürich – 東京}", "Zürich – 東京"),
        ("} stray closer \\boxed{kept}", "kept"),
    ],
)
def test_extract_boxed_returns_the_content_of_the_last_complete_box(text, expected):
    """The last box wins; nested braces are matched by counting and kept verbatim."""
    assert extract_boxed(text) == expected


def test_an_unterminated_last_box_is_no_answer_even_after_a_complete_one():
    """As in MemAgent: an answer cut off inside its last box has no answer; an earlier box is not used."""
    assert extract_boxed("\\boxed{closed} and then \\boxed{never clo") is None
    assert extract_boxed("\\boxed{never closed") is None
    assert extract_boxed("\\boxed{a{b}") is None, "the inner brace closes, the box does not"
    assert extract_boxed("\\boxed{closed} then a stray \\boxedfoo") is None, "the last \\boxed is the box"


def test_the_box_that_opens_last_wins_when_boxes_nest():
    """`\\boxed{a \\boxed{b}}`: the inner box opens last, so it is the answer."""
    assert extract_boxed("\\boxed{a \\boxed{b}}") == "b"


@pytest.mark.parametrize(
    "text", ["\\fbox{Paris}", "boxed{Paris}", "\\boxedx{Paris}", "\\boxed\n{Paris}", "\\boxed\t{Paris}", "\\boxed"]
)
def test_fbox_and_a_boxed_not_followed_by_a_brace_are_no_answer(text):
    """MemAgent's reader accepts only `\\boxed{` (its reward scores the rest 0, its evaluator stops)."""
    assert extract_boxed(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\boxed Paris", "Paris"),
        ("so $\\boxed Paris$, I think", "Paris"),
        ("\\boxed {Paris}", "{Paris}"),
        ("\\boxed Paris and later \\boxed{Lyon}", "Paris and later \\boxed{Lyon}"),
        ("\\boxed{Lyon} and later \\boxed Paris", "Paris"),
        ("\\boxed ", ""),
    ],
)
def test_a_boxed_followed_by_a_space_reads_up_to_the_next_dollar_wherever_it_is(text, expected):
    """MemAgent's brace-less form: `\\boxed ` anywhere wins over braced boxes; the answer ends at `$`."""
    assert extract_boxed(text) == expected


@pytest.fixture
def brace_scan(monkeypatch) -> list[int]:
    """The characters each call of the brace scan (`matching_brace`) reads, one entry per call."""
    scanned: list[int] = []
    original = scoring.matching_brace

    def counting(text: str, opening: int) -> int | None:
        closing = original(text, opening)
        scanned.append((len(text) if closing is None else closing + 1) - opening)
        return closing

    monkeypatch.setattr(scoring, "matching_brace", counting)
    return scanned


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\boxed{" * 200_000, None),
        ("\\boxed{a" + "{" * 200_000, None),
        ("\\boxed{" * 100_000 + "}" * 100_000, ""),
        ("\\boxed{x} " * 50_000 + "\\boxed{" + "{}" * 50_000, None),
    ],
    ids=["unclosed_boxes", "deep_unclosed_braces", "nested_boxes", "many_boxes_then_an_unclosed_one"],
)
def test_a_degenerate_answer_is_read_in_one_pass(brace_scan, measured, text, expected):
    """A degenerate answer (200,000 boxes or braces) must not stall the reward: the brace scan runs
    once per read, from the last box, and reads each character at most once, whatever the boxes
    before it. A rescan per box (the quadratic reader) would read about n^2 / 2 characters."""
    begun = time.perf_counter()
    assert extract_boxed(text) == expected
    assert strict_reward(text, ["x"]) == 0.0
    seconds = time.perf_counter() - begun
    assert 1 <= len(brace_scan) <= 2, "one scan per read: extract_boxed, then strict_reward's window if it has a box"
    assert sum(brace_scan) <= len(text), "every character read at most once"
    measured(f"{len(text):,} characters: {sum(brace_scan):,} read by the brace scan, {seconds:.3f} s")


# --- strict training reward ---------------------------------------------------------------------


def test_strict_reward_ignores_case_spaces_and_newlines_only():
    """MemAgent deletes ASCII spaces and newlines; a tab or a no-break space makes the answer wrong."""
    assert strict_reward("so the answer is \\boxed{ New  York City }", ["new york city"]) == 1.0
    assert strict_reward("\\boxed{NewYork City\n}", ["New York\nCity"]) == 1.0
    assert strict_reward("\\boxed{NewYork\tCity}", ["New York City"]) == 0.0
    assert strict_reward("\\boxed{New\u00a0York City}", ["newyorkcity"]) == 0.0


@pytest.mark.parametrize(
    ("box", "truth", "reward"),
    [
        ("\\left(1\\right)", "(1)", 1.0),
        ("90^\\circ", "90", 1.0),
        ("\\dfrac{1}{2}", "\\frac{1}{2}", 1.0),
        ("5\\%", "5", 1.0),
        ("a .5", "a0.5", 1.0),
        ("a .5", "a.5", 0.0),
        ("Platform", "Plat form", 1.0),
    ],
)
def test_strict_reward_applies_memagents_latex_rewrites_to_both_sides(box, truth, reward):
    """MemAgent's reward reuses a LaTeX-answer normaliser; its rewrites are reproduced, quirks included."""
    assert strict_reward(f"\\boxed{{{box}}}", [truth]) == reward


def test_strict_reward_lower_cases_before_reading_the_box():
    """The window is lower-cased first, so `\\BOXED{...}` counts for the reward (not for reporting)."""
    assert strict_reward("\\BOXED{Paris}", ["paris"]) == 1.0
    assert score_answer("\\BOXED{Paris}", ["paris"]).has_box is False


def test_strict_reward_reads_memagents_brace_less_box():
    """`\\boxed paris` is an answer; `\\boxed {paris}` reads as `{paris}` and so is wrong, as in MemAgent."""
    assert strict_reward("\\boxed Paris", ["Paris"]) == 1.0
    assert strict_reward("\\boxed {Paris}", ["Paris"]) == 0.0


def test_strict_reward_counts_punctuation_and_articles():
    """No SQuAD normalisation: these are the answers that make strict lower than sub_em."""
    assert strict_reward("\\boxed{the Eiffel Tower}", ["Eiffel Tower"]) == 0.0
    assert strict_reward("\\boxed{Paris, France}", ["Paris"]) == 0.0
    assert strict_reward("\\boxed{Paris.}", ["Paris"]) == 0.0


def test_strict_reward_takes_the_max_over_ground_truths():
    """Any one matching ground truth earns the reward."""
    assert strict_reward("\\boxed{NYC}", ["New York City", "NYC"]) == 1.0
    assert strict_reward("\\boxed{LA}", ["New York City", "NYC"]) == 0.0


def test_strict_reward_uses_the_last_box_not_any_box():
    """An earlier right answer does not rescue a later wrong one."""
    assert strict_reward("\\boxed{Paris} no wait \\boxed{Lyon}", ["Paris"]) == 0.0
    assert strict_reward("\\boxed{Lyon} no wait \\boxed{Paris}", ["Paris"]) == 1.0


def test_a_box_before_the_300_character_window_earns_no_reward_but_is_reported():
    """The window is cut first: a box followed by 300 characters is outside it; reporting reads it."""
    early_box = "\\boxed{Paris}" + "x" * STRICT_WINDOW_CHARS
    assert strict_reward(early_box, ["Paris"]) == 0.0
    scores = score_answer(early_box, ["Paris"])
    assert (scores.strict, scores.em, scores.sub_em, scores.f1) == (0.0, 1.0, 1.0, 1.0)


def test_a_box_straddling_the_window_start_does_not_count():
    """A box that opens before the window and closes inside it is cut in half, so it is not seen."""
    box = "\\boxed{Paris}"
    straddling = box + "x" * (STRICT_WINDOW_CHARS - len(box) + 3)
    assert len(straddling) - straddling.index("}") < STRICT_WINDOW_CHARS, "the closing brace is inside"
    assert strict_reward(straddling, ["Paris"]) == 0.0


def test_a_box_that_starts_exactly_at_the_window_start_counts():
    """The window is the last 300 code points, inclusive of its first one."""
    box = "\\boxed{Paris}"
    text = "y" * 1000 + box + "x" * (STRICT_WINDOW_CHARS - len(box))
    assert strict_reward(text, ["Paris"]) == 1.0
    assert strict_reward(text + "x", ["Paris"]) == 0.0


def test_an_unterminated_last_box_scores_zero_everywhere():
    """As in MemAgent, an answer cut off inside its last box earns nothing, even with an earlier right box."""
    cut_off = "\\boxed{Paris} hmm, or rather \\boxed{Par"
    assert strict_reward(cut_off, ["Paris"]) == 0.0
    scores = score_answer(cut_off, ["Paris"])
    assert (scores.strict, scores.em, scores.sub_em, scores.f1) == (0.0, 0.0, 0.0, 0.0)
    assert scores.extracted is None and not scores.has_box


def test_strict_reward_without_a_box_or_ground_truths_is_zero():
    """No box, or nothing to compare with, is 0.0 and never an exception."""
    assert strict_reward("Paris", ["Paris"]) == 0.0
    assert strict_reward("\\boxed{Paris}", []) == 0.0


def test_a_bare_string_ground_truth_is_one_answer_not_characters():
    """`strict_reward(text, "Paris")` must not accept the box `p` by iterating the string."""
    assert strict_reward("\\boxed{p}", "Paris") == 0.0
    assert strict_reward("\\boxed{paris}", "Paris") == 1.0
    assert score_answer("\\boxed{p}", "Paris").em == 0.0, "with characters, answers[0] would be 'P'"


# --- normalisation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  The  Eiffel Tower, an icon! ", "eiffel tower icon"),
        ("A", ""),
        ("theatre another banana", "theatre another banana"),
        ("U.S.", "us"),
        ("1,000", "1000"),
        ("Eiffel-Tower", "eiffeltower"),
        ("$5 + tax", "5 tax"),
        ("the_end", "theend"),
        ("An\u00a0apple", "apple"),
    ],
)
def test_normalisation_drops_case_punctuation_articles_and_extra_spaces(text, expected):
    """HotpotQA rules: ASCII punctuation is deleted (not spaced) and only whole-word articles go."""
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("“Quoted” — dash", "“quoted” — dash"),
        ("‘single’ «guillemets»", "‘single’ «guillemets»"),
        ("東京。", "東京。"),
        ("ＰＡＲＩＳ", "ｐａｒｉｓ"),
        ("a\u0301 b", "\u0301 b"),
        ("x\u200by", "x\u200by"),
    ],
)
def test_official_normalisation_keeps_every_non_ascii_character(text, expected):
    """The official evaluator deletes only ASCII punctuation: curly quotes, dashes, CJK full stops,
    full-width letters and zero-width spaces stay; a decomposed accent splits an article off its mark."""
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("“Quoted” — dash", "quoted dash"),
        ("‘single’ «guillemets»", "single guillemets"),
        ("東京。", "東京"),
        ("北京、上海", "北京上海"),
        ("Théâtre", "théâtre"),
        ("ＰＡＲＩＳ", "paris"),
    ],
)
def test_with_unicode_folding_unicode_punctuation_is_punctuation_and_letters_are_kept(text, expected):
    """MEM_FOLD_UNICODE: curly quotes, dashes and CJK punctuation go like ASCII punctuation."""
    assert normalize_answer(text, FOLDED) == expected


def test_composed_and_decomposed_accents_compare_equal_only_with_unicode_folding():
    """NFKC first when folding, so the same word typed two ways is the same answer; officially it is not."""
    composed, decomposed = "Zürich", unicodedata.normalize("NFD", "Zürich")
    assert composed != decomposed
    assert exact_match(composed, decomposed, FOLDED) == 1.0
    assert exact_match(composed, decomposed) == 0.0
    assert exact_match("Zürich", "Zurich", FOLDED) == 0.0, "accents are not stripped"


def test_curly_quotes_cost_the_exact_match_officially_and_not_when_folding():
    """The issue's example: official EM 0, folded EM 1; sub_em finds the gold inside either way."""
    scores = score_answer("\\boxed{“Canary Islands, Spain”}", ["Canary Islands, Spain"])
    assert (scores.em, scores.sub_em) == (0.0, 1.0)
    # tokens [“canary, islands, spain”] vs [canary, islands, spain]: overlap 1, P = R = 1/3
    assert scores.f1 == pytest.approx(1 / 3)
    folded = score_answer("\\boxed{“Canary Islands, Spain”}", ["Canary Islands, Spain"], rules=FOLDED)
    assert (folded.em, folded.sub_em, folded.f1) == (1.0, 1.0, 1.0)


# --- reporting metrics ----------------------------------------------------------------------------


def test_exact_match_after_normalisation():
    """EM compares normalised strings for equality."""
    assert exact_match("The Beatles", "beatles") == 1.0
    assert exact_match('"Beatles"!', "beatles") == 1.0
    assert exact_match("Beatles band", "beatles") == 0.0


def test_substring_match_works_in_both_directions():
    """sub_em: the prediction may contain the gold or be contained in it."""
    assert substring_exact_match("Paris, France", "Paris") == 1.0
    assert substring_exact_match("Paris", "Paris, France") == 1.0
    assert substring_exact_match("London", "Paris") == 0.0


def test_substring_match_is_by_character_as_in_memagent():
    """The leniency is character-level: "art" is inside "stuttgart". Documented, not fixed."""
    assert substring_exact_match("art", "Stuttgart") == 1.0


def test_an_answer_that_normalises_to_nothing_is_inside_every_answer_as_in_memagent():
    """MemAgent's sub_em: the empty string is a sub-string of everything."""
    assert substring_exact_match("the", "Paris") == 1.0
    assert substring_exact_match("?!", "Paris") == 1.0
    assert substring_exact_match("Paris", "") == 1.0
    assert score_answer("\\boxed{the}", ["Paris"]).sub_em == 1.0
    assert score_answer("\\boxed{}", ["Paris"]).sub_em == 0.0, "an empty box is no prediction at all"


def test_with_the_empty_guard_an_empty_answer_matches_only_an_empty_one():
    """MEM_SUB_EM_GUARD: a prediction such as "the" or "?" does not match every answer."""
    assert substring_exact_match("", "Paris", GUARDED) == 0.0
    assert substring_exact_match("the", "Paris", GUARDED) == 0.0
    assert substring_exact_match("?!", "Paris", GUARDED) == 0.0
    assert substring_exact_match("Paris", "", GUARDED) == 0.0
    assert substring_exact_match("", "the", GUARDED) == 1.0 == exact_match("", "the")
    assert score_answer("\\boxed{the}", ["Paris"], rules=GUARDED).sub_em == 0.0


def test_two_answers_that_normalise_to_nothing_are_an_exact_match_with_zero_f1():
    """The official evaluator: EM compares strings (equal), F1 counts tokens (none overlap)."""
    assert exact_match("the", "?") == 1.0
    assert token_f1("the", "?") == 0.0
    assert token_f1("", "") == 0.0


def test_token_f1_by_hand():
    """Precision and recall over normalised tokens, computed by hand."""
    # "the big red dog" -> [big, red, dog]; "red dog" -> [red, dog]; overlap 2.
    # precision 2/3, recall 2/2, F1 = 2 * (2/3) * 1 / (2/3 + 1) = 0.8
    assert token_f1("the big red dog", "red dog") == pytest.approx(0.8)
    # repeats count once per match: [red, red, dog] vs [red, dog, cat] overlap red x1 + dog x1 = 2;
    # precision 2/3, recall 2/3, F1 = 2/3.
    assert token_f1("red red dog", "red dog cat") == pytest.approx(2 / 3)
    # [new, york] vs [new, york, city]: precision 1, recall 2/3, F1 = 2 * (2/3) / (5/3) = 0.8
    assert token_f1("New York", "New York City") == pytest.approx(0.8)
    assert token_f1("red dog", "The red dog.") == 1.0
    assert token_f1("cat", "red dog") == 0.0


def test_yes_no_answers_get_no_partial_f1():
    """HotpotQA: a yes/no/noanswer prediction or gold scores F1 only when both are equal."""
    assert token_f1("yes", "no") == 0.0
    assert token_f1("yes it is", "yes") == 0.0, "gold is yes"
    assert token_f1("no", "no way") == 0.0, "prediction is no"
    assert token_f1("noanswer", "no answer") == 0.0
    assert token_f1("Yes.", "yes") == 1.0
    assert exact_match("No!", "no") == 1.0


def test_score_answer_reports_against_the_first_ground_truth_by_default():
    """MemAgent's evaluator compares with answers[0]; `reporting="max"` takes the best of all."""
    scores = score_answer("I think \\boxed{NYC}", ["New York City", "NYC"])
    assert (scores.em, scores.sub_em, scores.f1, scores.strict) == (0.0, 0.0, 0.0, 1.0)
    assert scores.has_box and scores.extracted == "NYC"
    best = score_answer("I think \\boxed{NYC}", ["New York City", "NYC"], reporting="max")
    assert (best.em, best.sub_em, best.f1, best.strict) == (1.0, 1.0, 1.0, 1.0)


def test_max_reporting_takes_each_metrics_best_ground_truth():
    """Under "max" each metric picks its own best ground truth."""
    scores = score_answer("\\boxed{red dog}", ["big red dog house", "red dog", "dog"], reporting="max")
    assert (scores.em, scores.sub_em, scores.f1) == (1.0, 1.0, 1.0)


def test_score_answer_without_a_box_is_all_zero():
    """No box: nothing is read from free text, every metric is 0 and `has_box` says why."""
    scores = score_answer("The answer is Paris", ["Paris"])
    assert scores == dataclasses.replace(scores, em=0.0, sub_em=0.0, f1=0.0, strict=0.0, has_box=False)
    assert scores.extracted is None


def test_an_empty_box_is_a_box_that_scores_zero():
    """`\\boxed{}` was answered (has_box) but matches no real answer under any metric."""
    scores = score_answer("\\boxed{}", ["Paris"])
    assert (scores.has_box, scores.extracted) == (True, "")
    assert (scores.em, scores.sub_em, scores.f1, scores.strict) == (0.0, 0.0, 0.0, 0.0)


def test_score_answer_with_no_ground_truths_is_all_zero():
    """An empty answers list scores 0.0 everywhere rather than raising inside a reward."""
    scores = score_answer("\\boxed{Paris}", [])
    assert (scores.em, scores.sub_em, scores.f1, scores.strict) == (0.0, 0.0, 0.0, 0.0)
    assert scores.has_box and scores.extracted == "Paris"


def test_strict_and_sub_em_disagree_on_lenient_matches():
    """The documented ~50% vs ~80% gap in one example: wrong for training, right for reporting."""
    scores = score_answer("\\boxed{Paris, France}", ["Paris"])
    assert (scores.strict, scores.sub_em, scores.em) == (0.0, 1.0, 0.0)


def test_an_unknown_reporting_mode_is_a_clear_error():
    """A typo in `reporting` fails loudly instead of silently scoring against answers[0]."""
    with pytest.raises(ValueError, match="reporting='all'"):
        score_answer("\\boxed{Paris}", ["Paris"], reporting="all")  # type: ignore[arg-type]


def test_answer_scores_are_immutable():
    """Scores are a record of what happened; nothing downstream may change them."""
    scores = score_answer("\\boxed{Paris}", ["Paris"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        scores.em = 0.0  # type: ignore[misc]


# --- properties -----------------------------------------------------------------------------------


RULES = st.builds(ReportingRules, st.booleans(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.text(), st.lists(st.text(), max_size=3), st.sampled_from(["first", "max"]), RULES)
def test_scores_never_raise_and_stay_in_range_on_any_unicode(text, golds, reporting, rules):
    """Any text and any ground truths give scores in [0, 1]; a reward never raises."""
    scores = score_answer(text, golds, reporting=reporting, rules=rules)
    for value in (scores.em, scores.sub_em, scores.f1, scores.strict):
        assert 0.0 <= value <= 1.0
    assert scores.has_box == (scores.extracted is not None)
    for gold in golds:
        for metric in (exact_match, substring_exact_match, token_f1):
            assert 0.0 <= metric(text, gold, rules) <= 1.0


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=STRICT_WINDOW_CHARS - len("\\boxed{}")).filter(
        lambda s: "{" not in s and "}" not in s and "\\" not in s
    )
)
def test_a_boxed_ground_truth_always_earns_the_strict_reward(gold):
    """Whatever the ground truth (without braces or backslashes), boxing it verbatim is correct."""
    assert strict_reward(f"answer: \\boxed{{{gold}}}", [gold]) == 1.0
    assert strict_reward(f"\\boxed{{{gold}}}", ["other", gold]) == 1.0


@settings(max_examples=300, deadline=None)
@given(BOX_FREE, BOX_FREE, BOX_FREE)
def test_extract_boxed_recovers_the_boxed_text_among_any_other_text(prefix, content, suffix):
    """A single box in brace- and backslash-free text is found and returned exactly."""
    assert extract_boxed(f"{prefix}\\boxed{{{content}}}{suffix}") == content


@settings(max_examples=300, deadline=None)
@given(st.text(), RULES)
def test_exact_match_is_reflexive_when_something_survives_normalisation(text, rules):
    """A non-empty normalised answer matches itself under every reporting metric."""
    if normalize_answer(text, rules):
        assert exact_match(text, text, rules) == substring_exact_match(text, text, rules) == 1.0
        assert token_f1(text, text, rules) == 1.0


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text(), RULES)
def test_em_never_exceeds_sub_em_nor_f1_unless_both_normalise_to_nothing(prediction, gold, rules):
    """An exact match is also a sub-string match, and a perfect F1 when it has a token."""
    em = exact_match(prediction, gold, rules)
    assert em <= substring_exact_match(prediction, gold, rules)
    if normalize_answer(gold, rules):
        assert em <= token_f1(prediction, gold, rules)


@settings(max_examples=300, deadline=None)
@given(st.text(), RULES)
def test_normalisation_is_idempotent(text, rules):
    """Normalising twice changes nothing, so pre-normalised answers score the same."""
    once = normalize_answer(text, rules)
    assert normalize_answer(once, rules) == once


# --- where the answer is read, and the settings -------------------------------------------------


@pytest.mark.parametrize(
    ("response", "region"),
    [
        ("  \\boxed{Paris}  ", "\\boxed{Paris}"),
        ("<think>\\boxed{Lyon}</think>\n\n\\boxed{Paris}", "\\boxed{Paris}"),
        ("<think>a</think> b </think> \\boxed{Paris} ", "\\boxed{Paris}"),
        ("<think>\\boxed{Lyon}</think>  \n", "<think>\\boxed{Lyon}</think>"),
        ("no think tags", "no think tags"),
    ],
)
def test_the_box_is_read_after_the_last_think_end_or_from_everything_when_nothing_follows(response, region):
    """MemAgent's evaluator: the text after `</think>`, or the whole answer when that is empty."""
    assert answer_region(response) == region


def test_thinking_text_is_not_read_when_an_answer_follows_it():
    scores = score_answer("<think>maybe \\boxed{Lyon}</think>\n\\boxed{Paris}", ["Paris"])
    assert (scores.extracted, scores.em) == ("Paris", 1.0)


def test_reporting_rules_come_from_the_mem_settings_and_default_to_the_references():
    """MEM_FOLD_UNICODE and MEM_SUB_EM_GUARD reach the scorer through one constructor."""
    assert ReportingRules.of(MemAgentConfig()) == OFFICIAL == ReportingRules()
    config = MemAgentConfig.from_env({"MEM_FOLD_UNICODE": "1", "MEM_SUB_EM_GUARD": "1"})
    assert ReportingRules.of(config) == ReportingRules(fold_unicode=True, empty_guard=True)
