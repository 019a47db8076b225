import json

import pytest

from busca.search.eval.golden import GoldenError, load_golden

SEED = [
    {"pergunta": "Qual o prazo do reembolso?", "trecho": "7 dias úteis"},
    {"pergunta": "Tem juros no parcelamento?", "trecho": "sem juros até 6 vezes"},
]


def write(tmp_path, data, name="golden.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, ensure_ascii=False),
                    encoding="utf-8")
    return path


def test_the_seed_format_exactly(tmp_path):
    golden = load_golden(write(tmp_path, SEED))
    assert golden.kind == "json"
    assert [q.text for q in golden.questions] == ["Qual o prazo do reembolso?",
                                                  "Tem juros no parcelamento?"]
    assert golden.questions[0].trecho == "7 dias úteis"
    assert all(q.answerable for q in golden.questions)


def test_ids_url_tags_and_unanswerable(tmp_path):
    golden = load_golden(write(tmp_path, [
        {"id": "p01", "tipo": "parafrase", "pergunta": "a?", "trecho": "x", "url": "https://s/a"},
        {"id": 7, "tipo": "sem_resposta", "pergunta": "b?", "trecho": None, "nota": 2,
         "lista": [1]},
        {"pergunta": "c?", "url": "https://s/c"},
    ]))
    a, b, c = golden.questions
    assert (a.id, a.url, a.tags) == ("p01", "https://s/a", {"tipo": "parafrase"})
    assert (b.id, b.answerable, b.tags) == ("7", False, {"tipo": "sem_resposta", "nota": "2"})
    assert c.answerable and c.trecho is None
    assert [q.id for q in golden.unanswerable] == ["7"]


def test_english_keys(tmp_path):
    golden = load_golden(write(tmp_path, [{"question": "a?", "answer": "x"},
                                          {"question": "b?", "passage": "y"}]))
    assert [(q.text, q.trecho) for q in golden.questions] == [("a?", "x"), ("b?", "y")]


@pytest.mark.parametrize("text, message", [
    ('[{"question": "a?", "expected": "x"}]',
     r'item 1: has no "answer" \(its keys: question, expected\); write the passage that'
     r' answers it \(copied from the document, word for word\), or "answer": null for a'),
    ('[{"query": "a?", "text": "x"}]', r'item 1: has no "answer" \(its keys: query, text\)'),
    ('[{"question": "a?", "answer": 7}]', '"answer" must be a string or null, not int'),
    ('[{"question": "a?", "passage": " "}]', r'"passage" is empty; fill it in, or use null'),
    ('[{"pergunta": "a?", "answer": 7}]', '"answer" must be a string or null, not int'),
])
def test_english_keys_are_answered_in_their_own_words(tmp_path, text, message):
    """An item written with English keys was told of "trecho", a key it never used
    ('has no "trecho" (its keys: question, expected)', '"trecho" must be a string')."""
    with pytest.raises(GoldenError, match=message) as caught:
        load_golden(write(tmp_path, text))
    assert "trecho" not in str(caught.value)


def test_ids_without_an_id_are_stable_under_reordering(tmp_path):
    first = load_golden(write(tmp_path, SEED, "a.json")).questions
    second = load_golden(write(tmp_path, SEED[::-1], "b.json")).questions
    assert {q.text: q.id for q in first} == {q.text: q.id for q in second}


def test_jsonl(tmp_path):
    text = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in SEED) + "\n"
    golden = load_golden(write(tmp_path, text, "golden.jsonl"))
    assert golden.kind == "jsonl" and len(golden.questions) == 2


def test_beir_folder(tmp_path):
    (tmp_path / "qrels").mkdir()
    write(tmp_path, '{"_id": "q1", "text": "Quem fundou?"}\n{"_id": "q2", "text": "Onde?"}\n'
                    '{"_id": "q3", "text": "não avaliada"}\n', "queries.jsonl")
    write(tmp_path, "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\nq2\td3\t1\nq2\td4\t0\n",
          "qrels/test.tsv")
    write(tmp_path, "", "corpus.jsonl")
    golden = load_golden(tmp_path)
    assert golden.kind == "beir" and golden.corpus.endswith("corpus.jsonl")
    assert [(q.id, q.qrels) for q in golden.questions] == [
        ("q1", {"d1": 1, "d2": 2}), ("q2", {"d3": 1})]


@pytest.mark.parametrize("text, message", [
    ('[{"pergunta": "a?", "trecho": "x"},\n {"pergunta": "b?" "trecho": "y"}]',
     r"golden.json:2:20: invalid JSON \(Expecting ',' delimiter\)"),
    ('{"pergunta": "a?"}', "expected a JSON list"),
    ('[{"trecho": "x"}]', 'item 1: needs a non-empty "pergunta"'),
    ('[{"perguntas": "Qual?", "trecho": "x"}]',
     r'item 1: needs a non-empty "pergunta" .* string \(its keys: perguntas, trecho\)'),
    ('[{"pergunta": "  ", "trecho": "x"}]', 'item 1: needs a non-empty "pergunta"'),
    ('[{"pergunta": "a?", "trecho": 7}]', '"trecho" must be a string or null, not int'),
    ('[{"pergunta": "a?", "trecho": ""}]', '"trecho" is empty'),
    ('["a?"]', "item 1: expected an object"),
    ('[]', "the golden set is empty"),
    ('[{"id": "x", "pergunta": "a?", "trecho": null}, {"id": "x", "pergunta": "b?",'
     ' "trecho": null}]', "items 1 and 2 have the same id 'x'"),
    ('[{"pergunta": "a?", "trecho": null}, {"pergunta": "a?", "trecho": "x"}]',
     r"items 1 and 2 ask the same question \('a\?'\): keep one of them"),
    ('[{"pergunta": "a?", "url": 3}]', '"url" must be a non-empty string'),
    # what a person editing JSON by hand gets wrong: each named, with its fix
    ('[{"pergunta": "a?", "tipo": "lexical"}]',
     'item 1: has no "trecho" \\(its keys: pergunta, tipo\\); write the passage'),
    ('[{"pergunta": "a?", "trexo": "x"}]', r'item 1: has no "trecho" \(its keys: pergunta, trexo'),
    ('[{"pergunta": "a?", "resposta": "x"}]', "or \"trecho\": null for a question"),
    ('[{"pergunta": "Qual o prazo?", "trecho": null},\n {"pergunta": "qual o  PRAZO?",'
     ' "trecho": "7 dias"}]', "items 1 and 2 ask the same question"),
    ("", r"golden.json: the file is empty; write a JSON list"),
    (" \r\n\n", r"golden.json: the file is empty"),
    # the comma's place and one message on every Python (3.13's json says "Illegal trailing
    # comma" at the comma, 3.11's "Expecting value" at the bracket after it)
    ('[{"pergunta": "a?", "trecho": "x"},\n]',
     r"golden.json:1:35: invalid JSON \(a comma before '\]' ends no item; remove the trailing"
     r" comma\)$"),
    ('[{"pergunta": "a?", "trecho": "x",\n}]',
     r"golden.json:1:34: invalid JSON \(a comma before '}' ends no item; remove the trailing"
     r" comma\)$"),
])
def test_bad_golden_sets_say_where(tmp_path, text, message):
    with pytest.raises(GoldenError, match=message):
        load_golden(write(tmp_path, text))


def test_bad_jsonl_names_the_line(tmp_path):
    path = write(tmp_path, '{"pergunta": "a?", "trecho": "x"}\n{"pergunta": \n', "g.jsonl")
    with pytest.raises(GoldenError, match=r"g.jsonl:2:\d+: invalid JSON"):
        load_golden(path)
    path = write(tmp_path, '{"pergunta": "a?", "trecho": "x"},\n', "g.jsonl")
    with pytest.raises(GoldenError, match=r"g.jsonl:1:34: invalid JSON \(Extra data: a JSONL"
                                          " line ends without a comma; remove it"):
        load_golden(path)
    path = write(tmp_path, '[\n {"pergunta": "a?", "trecho": "x"}\n]\n', "g.jsonl")
    with pytest.raises(GoldenError, match="holds a JSON list, and a .jsonl file holds one object"
                                          " per line: name the file .json"):
        load_golden(path)


def test_what_a_hand_edit_leaves_harmless_is_read(tmp_path):
    """A byte-order mark, CRLF line ends, the English keys, a blank JSONL line: read as the
    same questions."""
    items = [{"pergunta": "Quando é o Dia do Professor?", "trecho": "15 de outubro"},
             {"pergunta": "Qual a cor da sede?", "trecho": None}]
    plain = load_golden(write(tmp_path, json.dumps(items, ensure_ascii=False, indent=1)))
    crlf = json.dumps(items, ensure_ascii=False, indent=1).replace("\n", "\r\n")
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + crlf.encode())
    english = [{"question": i["pergunta"], "answer": i["trecho"]} for i in items]
    lines = "\r\n\r\n".join(json.dumps(i, ensure_ascii=False) for i in items)
    for other in (load_golden(tmp_path / "bom.json"),
                  load_golden(write(tmp_path, json.dumps(english), "en.json")),
                  load_golden(write(tmp_path, lines, "g.jsonl"))):
        assert other.questions == plain.questions


def test_missing_file_and_bad_beir(tmp_path):
    with pytest.raises(GoldenError, match="no such file"):
        load_golden(tmp_path / "nada.json")
    with pytest.raises(GoldenError, match="needs queries.jsonl"):
        load_golden(tmp_path)
    write(tmp_path, '{"_id": "q1", "text": "a"}\n', "queries.jsonl")
    (tmp_path / "qrels").mkdir()
    with pytest.raises(GoldenError, match=r"no qrels/test.tsv \(found: none\)"):
        load_golden(tmp_path)
    write(tmp_path, "q9\td1\t1\n", "qrels/dev.tsv")
    with pytest.raises(GoldenError, match="queries.jsonl lacks"):
        load_golden(tmp_path)
    write(tmp_path, "q1\td1\t1\nq1\td2\tmuito\n", "qrels/dev.tsv")
    with pytest.raises(GoldenError, match=r"dev.tsv:2: expected query-id"):
        load_golden(tmp_path)


def test_beir_query_fields_become_tags(tmp_path):
    (tmp_path / "qrels").mkdir()
    write(tmp_path, '{"_id": "q1", "text": "Quem fundou?", "tipo": "parafrase", "n": 2,'
                    ' "metadata": {}}\n{"_id": "q2", "text": "Onde?", "tipo": "lexical"}\n',
          "queries.jsonl")
    write(tmp_path, "q1\td1\t1\nq2\td3\t1\n", "qrels/test.tsv")
    q1, q2 = load_golden(tmp_path).questions
    assert q1.tags == {"tipo": "parafrase", "n": "2"}
    assert q2.tags == {"tipo": "lexical"}


def test_a_split_other_than_the_default_is_refused_for_a_file(tmp_path):
    """--split chooses a BEIR folder's qrels: on a JSON or JSONL file it was ignored."""
    for name in ("golden.json", "golden.jsonl"):
        path = write(tmp_path, json.dumps(SEED[0]) if name.endswith("l") else SEED, name)
        with pytest.raises(GoldenError, match=f"{name}: --split dev chooses a BEIR folder's"
                                              " qrels.*leave --split out"):
            load_golden(path, split="dev")
        assert load_golden(path).questions == load_golden(path, split="test").questions
    (tmp_path / "qrels").mkdir()
    write(tmp_path, '{"_id": "q1", "text": "a"}\n', "queries.jsonl")
    write(tmp_path, "q1\td1\t1\n", "qrels/dev.tsv")
    write(tmp_path, "q1\td2\t1\n", "qrels/train.tsv")
    assert load_golden(tmp_path, split="dev").questions[0].qrels == {"d1": 1}


def test_a_split_asked_for_that_the_folder_lacks_is_refused(tmp_path):
    """--split dev on a folder with only qrels/test.tsv judged by test's qrels, silently:
    only the default split falls back to the folder's only qrels file."""
    (tmp_path / "qrels").mkdir()
    write(tmp_path, '{"_id": "q1", "text": "a"}\n', "queries.jsonl")
    write(tmp_path, "q1\td1\t1\n", "qrels/test.tsv")
    with pytest.raises(GoldenError, match=r"no qrels/dev.tsv \(found: test.tsv\): choose one"
                                          " with --split test"):
        load_golden(tmp_path, split="dev")
    (tmp_path / "qrels" / "test.tsv").rename(tmp_path / "qrels" / "dev.tsv")
    assert load_golden(tmp_path).questions[0].qrels == {"d1": 1}  # the default falls back


def test_a_judged_beir_query_without_text_is_refused_not_dropped(tmp_path):
    """A query the qrels judge, whose text is blank, was left out without a word."""
    (tmp_path / "qrels").mkdir()
    write(tmp_path, '{"_id": "q1", "text": "Quem fundou?"}\n{"_id": "q2", "text": " \\n "}\n'
                    '{"_id": "q3", "text": ""}\n', "queries.jsonl")
    write(tmp_path, "q1\td1\t1\nq2\td2\t1\n", "qrels/test.tsv")
    with pytest.raises(GoldenError, match=r"queries.jsonl:2: the query 'q2' has no text"):
        load_golden(tmp_path)
    write(tmp_path, "q1\td1\t1\n", "qrels/test.tsv")  # q3 is not judged: no matter
    assert [q.id for q in load_golden(tmp_path).questions] == ["q1"]


@pytest.mark.parametrize("encoding, name", [("latin-1", "golden.json"),
                                            ("cp1252", "golden.jsonl")])
def test_a_golden_set_in_another_encoding_names_the_line_and_the_fix(tmp_path, encoding,
                                                                     name):
    text = "\n".join(json.dumps(item, ensure_ascii=False) for item in SEED)
    path = tmp_path / name
    path.write_bytes((text if name.endswith("l") else f"[{text.replace(chr(10), ',' + chr(10))}]")
                     .encode(encoding))
    with pytest.raises(GoldenError) as caught:
        load_golden(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:1:") and "\n" not in message
    assert "is not UTF-8" in message and f"iconv -f latin1 -t utf-8 {path}" in message


def test_a_golden_set_with_a_bom_reads(tmp_path):
    for name in ("golden.json", "golden.jsonl"):
        text = (json.dumps(SEED, ensure_ascii=False) if name == "golden.json" else
                "\n".join(json.dumps(item, ensure_ascii=False) for item in SEED))
        (tmp_path / name).write_text(text, encoding="utf-8-sig")
        assert [q.trecho for q in load_golden(tmp_path / name).questions] == [
            "7 dias úteis", "sem juros até 6 vezes"]


def test_a_utf16_golden_set_says_so(tmp_path):
    path = tmp_path / "golden.json"
    path.write_text(json.dumps(SEED, ensure_ascii=False), encoding="utf-16")
    with pytest.raises(GoldenError, match=r"golden.json: is UTF-16 text, not UTF-8: .*iconv -f"
                                          " utf-16 -t utf-8"):
        load_golden(path)


def test_a_qrels_pair_graded_twice_otherwise_is_refused(tmp_path):
    """`q1 d1 1` then `q1 d1 0`: busca kept d1 relevant, trec_eval and ranx take the last
    line (not relevant), so the same qrels scored differently."""
    (tmp_path / "qrels").mkdir()
    write(tmp_path, '{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "b"}\n', "queries.jsonl")
    write(tmp_path, "q1\td1\t1\nq2\td2\t1\nq1\td1\t1\n", "qrels/test.tsv")  # the same: fine
    assert load_golden(tmp_path).questions[0].qrels == {"d1": 1}
    write(tmp_path, "q1\td1\t1\nq2\td2\t1\nq1\td1\t0\n", "qrels/test.tsv")
    with pytest.raises(GoldenError, match=r"test.tsv:3: q1 d1 graded 0 here and 1 on line 1:"
                                          " keep one line"):
        load_golden(tmp_path)


def test_a_json_file_of_one_object_per_line_is_told_to_be_jsonl(tmp_path):
    """JSONL saved as golden.json said "golden.json:2:1: invalid JSON (Extra data)", with no
    word of what to change; the opposite slip (a JSON list in a .jsonl) names the fix."""
    lines = "\r\n".join(json.dumps(i, ensure_ascii=False) for i in SEED) + "\r\n"
    with pytest.raises(GoldenError, match=r"/golden.json: holds one JSON object per line"
                                          r" \(JSONL\): name the file .jsonl, or put the"
                                          r" objects in a JSON list"):
        load_golden(write(tmp_path, lines))
    assert load_golden(write(tmp_path, lines, "golden.jsonl")).kind == "jsonl"
    # a list with a broken item is still told where, not called JSONL
    with pytest.raises(GoldenError, match=r"golden.json:2:\d+: invalid JSON"):
        load_golden(write(tmp_path, '{"pergunta": "a?", "trecho": "x"}\n{"pergunta": \n'))


def test_a_tag_typed_in_decomposed_accents_is_one_slice_with_the_composed_one(tmp_path):
    """"paráfrase" typed on a Mac (a + combining acute) and on Linux (á) were two slices
    "paráfrase" of one question each; questions and trechos were already read as NFC."""
    import unicodedata
    items = [{"pergunta": "a?", "trecho": "x", "tipo": "paráfrase"},
             {"pergunta": "b?", "trecho": "y", unicodedata.normalize("NFD", "tipo"):
              unicodedata.normalize("NFD", "paráfrase")},
             {"pergunta": "c?", "trecho": "z", unicodedata.normalize("NFD", "seção"): "1"}]
    golden = load_golden(write(tmp_path, items))
    assert [q.tags for q in golden.questions[:2]] == [{"tipo": "paráfrase"}] * 2
    assert golden.questions[2].tags == {"seção": "1"}


def test_several_urls_for_a_question_point_to_a_beir_folder(tmp_path):
    """A list of relevant pages under "url" was told only that "url" must be a string; the
    format that judges several documents per question is a BEIR folder."""
    with pytest.raises(GoldenError, match=r'item 1: "url" names one document .* give a BEIR'
                                          r" folder, whose qrels judge as many"):
        load_golden(write(tmp_path, [{"pergunta": "a?", "trecho": "x",
                                      "url": ["https://a.example/1", "https://a.example/2"]}]))
    with pytest.raises(GoldenError, match='"url" must be a non-empty string or null'):
        load_golden(write(tmp_path, [{"pergunta": "a?", "trecho": "x", "url": 7}]))


def test_a_trecho_copied_with_invisible_characters_labels_the_stored_text(tmp_path):
    """A trecho copied from a page's source or a CMS export keeps its soft hyphens and
    zero-width spaces ("infor\u00admação"), which no stored document holds: the label read
    "occurs in no indexed document: check the spelling" of a quote copied word for word."""
    from busca.crawler.store import Document
    from busca.search.eval.judge import chunk_documents, judge

    doc = Document("https://s/a", "A", "A infor\u00admação chega em 7\u200bdias úteis.")
    table = chunk_documents([doc.normalized()], {"kind": "words", "size": 200,
                                                 "overlap": 40})[0]
    golden = load_golden(write(tmp_path, [
        {"pergunta": "prazo?", "trecho": "infor\u00admação chega em 7\u200bdias\u2060 úteis"}]))
    assert golden.questions[0].trecho == "informação chega em 7dias úteis"
    judged = judge(golden, table)
    assert judged.problems == () and dict(judged.items[0].gains) == {0: 1.0}
