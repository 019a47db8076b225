"""Stopwords of the `pt` and `en` analyzers.

PORTUGUESE: the Snowball Portuguese stop word list (snowballstem.org, BSD 3-Clause licence, by Martin
Porter and Richard Boulton), as also shipped by NLTK; "têm" is added next to Snowball's "tém".

ENGLISH: the 33 words of Lucene's EnglishAnalyzer (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`),
the list Anserini/Pyserini's BM25 baselines use.
"""

from __future__ import annotations

PORTUGUESE = frozenset("""
a ao aos aquela aquelas aquele aqueles aquilo as até com como da das de dela delas dele
deles depois do dos e ela elas ele eles em entre era eram essa essas esse esses esta estamos
estar estas estava estavam este esteja estejam estejamos estes esteve estive estivemos
estiver estivera estiveram estiverem estivermos estivesse estivessem estivéramos
estivéssemos estou está estávamos estão eu foi fomos for fora foram forem formos fosse
fossem fui fôramos fôssemos haja hajam hajamos havemos haver hei houve houvemos houver
houvera houveram houverei houverem houveremos houveria houveriam houvermos houverá houverão
houveríamos houvesse houvessem houvéramos houvéssemos há hão isso isto já lhe lhes mais mas
me mesmo meu meus minha minhas muito na nas nem no nos nossa nossas nosso nossos num numa
não nós o os ou para pela pelas pelo pelos por qual quando que quem se seja sejam sejamos
sem ser serei seremos seria seriam será serão seríamos seu seus somos sou sua suas são só
também te tem temos tenha tenham tenhamos tenho terei teremos teria teriam terá terão
teríamos teu teus teve tinha tinham tive tivemos tiver tivera tiveram tiverem tivermos
tivesse tivessem tivéramos tivéssemos tu tua tuas tém têm tínhamos um uma você vocês vos à
às é éramos
""".split())

ENGLISH = frozenset("""
a an and are as at be but by for if in into is it no not of on or such that the their then
there these they this to was will with
""".split())
