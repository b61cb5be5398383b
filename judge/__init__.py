"""The rules engines, pure and standard library only: one package per game
(`judge.wordytaire`, `judge.crosstiles`) and the word list both read (`judge.lexicon`)."""

from judge.lexicon import Lexicon, LexiconError

__all__ = ["Lexicon", "LexiconError"]
