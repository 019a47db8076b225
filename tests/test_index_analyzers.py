import pytest

from busca.index.analyzers import UnknownAnalyzer, get_analyzer, java_terms


def test_java_terms_lowercase_letters_and_digits():
    assert java_terms("Olá, MUNDO! São-Paulo 3,5% snake_case ÇÃO") == [
        "olá", "mundo", "são", "paulo", "3", "5", "snake", "case", "ção"]


def test_java_terms_keep_other_scripts_and_digits():
    assert java_terms("Ωμέγα ½ ٣") == ["ωμέγα", "½", "٣"]


def test_unknown_analyzer_lists_known_ones():
    with pytest.raises(UnknownAnalyzer, match="java"):
        get_analyzer("klingon")
