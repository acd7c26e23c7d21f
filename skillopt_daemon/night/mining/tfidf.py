"""TF-IDF on numpy alone: a request's words (and pairs of words) weighted by how rare they are.

Mining describes each request by its terms before it compares requests. The weighting is the classic one
and matches scikit-learn's `TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, smooth_idf=True)` to the
last bit (`tests/daemon/night/test_mining_vectors.py` checks it wherever scikit-learn is installed): mining's
thresholds and weights were tuned with it, and the daemon should not carry scikit-learn and scipy (200 MB)
for one transform.

- terms: lower-cased tokens of `token_pattern`, stop words dropped, then every pair of neighbouring terms;
- a term's weight in a request: (1 + ln count) x idf, with idf = ln((1 + n) / (1 + df)) + 1 over the n
  requests fitted, df of them holding the term; each row then scaled to unit length.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from skillopt_daemon.night.mining.sparse import Rows

# English stop words (the Glasgow Information Retrieval Group's list, as scikit-learn ships it).
_STOP_WORDS = (
    "a about above across after afterwards again against all almost alone along already also although always "
    "am among amongst amoungst amount an and another any anyhow anyone anything anyway anywhere are around as "
    "at back be became because become becomes becoming been before beforehand behind being below beside "
    "besides between beyond bill both bottom but by call can cannot cant co con could couldnt cry de describe "
    "detail do done down due during each eg eight either eleven else elsewhere empty enough etc even ever "
    "every everyone everything everywhere except few fifteen fifty fill find fire first five for former "
    "formerly forty found four from front full further get give go had has hasnt have he hence her here "
    "hereafter hereby herein hereupon hers herself him himself his how however hundred i ie if in inc indeed "
    "interest into is it its itself keep last latter latterly least less ltd made many may me meanwhile might "
    "mill mine more moreover most mostly move much must my myself name namely neither never nevertheless next "
    "nine no nobody none noone nor not nothing now nowhere of off often on once one only onto or other others "
    "otherwise our ours ourselves out over own part per perhaps please put rather re same see seem seemed "
    "seeming seems serious several she should show side since sincere six sixty so some somehow someone "
    "something sometime sometimes somewhere still such system take ten than that the their them themselves "
    "then thence there thereafter thereby therefore therein thereupon these they thick thin third this those "
    "though three through throughout thru thus to together too top toward towards twelve twenty two un under "
    "until up upon us very via was we well were what whatever when whence whenever where whereafter whereas "
    "whereby wherein whereupon wherever whether which while whither who whoever whole whom whose why will "
    "with within without would yet you your yours yourself yourselves"
)
STOP_WORDS = frozenset(_STOP_WORDS.split())


class EmptyVocabulary(ValueError):
    """Every request held only stop words (or nothing): there is no term to weigh."""


class Tfidf:
    """Fitted on some texts (`fit_transform`), then weighs any text by the same terms (`transform`)."""

    def __init__(
        self, *, token_pattern: str = r"(?u)\b\w\w+\b", stop_words: Iterable[str] | None = STOP_WORDS
    ) -> None:
        self._tokens = re.compile(token_pattern).findall
        self._stop = frozenset(stop_words or ())
        self.vocabulary: dict[str, int] = {}
        self.idf = np.zeros(0)

    def terms_of(self, text: str) -> list[str]:
        """The text's terms in order: its words without stop words, then its pairs of neighbouring words."""
        words = [w for w in self._tokens(text.lower()) if w not in self._stop]
        return words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]

    @property
    def terms(self) -> list[str]:
        """The fitted terms, in column order (alphabetical)."""
        return sorted(self.vocabulary, key=self.vocabulary.__getitem__)

    def fit_transform(self, texts: Sequence[str]) -> Rows:
        """Learn the terms and their weights from `texts`, and weigh them.

        Raises EmptyVocabulary when no text holds a term.
        """
        # Each term's place of first appearance across all texts; a row's entries go in that order.
        first_seen: defaultdict[str, int] = defaultdict()
        first_seen.default_factory = first_seen.__len__
        counts = self._count(texts, first_seen.__getitem__)
        if not first_seen:
            raise EmptyVocabulary("empty vocabulary: the texts hold only stop words")
        alphabetical = sorted(first_seen)
        self.vocabulary = {term: k for k, term in enumerate(alphabetical)}
        to_column = np.empty(len(first_seen), dtype=np.int64)
        to_column[list(first_seen.values())] = [self.vocabulary[t] for t in first_seen]
        counts = Rows(counts.indptr, to_column[counts.indices], counts.data, len(alphabetical))
        df = np.bincount(counts.indices, minlength=counts.n_cols).astype(np.float64) + 1.0
        self.idf = np.log(np.full_like(df, len(texts) + 1.0) / df) + 1.0
        return self._weigh(counts)

    def transform(self, texts: Sequence[str]) -> Rows:
        """Weigh `texts` by the fitted terms (terms not fitted are ignored)."""
        known = self.vocabulary
        counts = self._count(texts, known.__getitem__, known.__contains__)
        return self._weigh(Rows(counts.indptr, counts.indices, counts.data, len(known)))

    def _count(
        self,
        texts: Sequence[str],
        index: Callable[[str], int],
        keep: Callable[[str], bool] | None = None,
    ) -> Rows:
        """How often each term occurs in each text, a row's entries sorted by `index` (columns not final)."""
        cols: list[int] = []
        values: list[int] = []
        lengths: list[int] = []
        for text in texts:
            terms = self.terms_of(text)
            found = Counter([index(t) for t in terms if keep is None or keep(t)])
            row = sorted(found.items())
            cols.extend(k for k, _ in row)
            values.extend(v for _, v in row)
            lengths.append(len(row))
        indptr = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        return Rows(indptr, np.asarray(cols, dtype=np.int64), np.asarray(values, dtype=np.float64), 0)

    def _weigh(self, counts: Rows) -> Rows:
        tf = np.log(counts.data) + 1.0
        return Rows(counts.indptr, counts.indices, tf * self.idf[counts.indices], counts.n_cols).normalized()
