"""English and Italian stopwords: grammar, workflow words, acknowledgements, generic requests.

Used by query extraction (a message made only of these has no topic) and by the BM25 handler
(when a window has more unique terms than it may keep, these go first). Lookup is on folded
terms (case-, accent- and compatibility-insensitive, see :func:`cwcore.index.tokenize.fold`).
"""

from __future__ import annotations

from cwcore.index.tokenize import fold

_EN = """
a about above after again against all almost also am an and any are aren as at be because been
before being below between both but by can cannot could couldn did didn do does doesn doing don
down during each either else even ever every few for from further get gets getting go goes going
gone got had hadn has hasn have haven having he her here hers herself him himself his how i if in
into is isn it its itself just let lets like may me might mine more most much must mustn my
myself need needs neither no nor not now of off often on once one only or other ought our ours
ourselves out over own perhaps quite rather really same shall shan she should shouldn so some
such than that the their theirs them themselves then there these they this those though through
thus to too under until up upon us very was wasn we well were weren what whatever when where
whether which while who whom whose why will with within without won would wouldn yet you your
yours yourself yourselves s t ll re ve d m
ok okay yes yeah yep sure thanks thank thx cool great nice good fine perfect awesome alright
right got understood sounds done agreed gotcha indeed hello hi hey please pls
continue proceed go ahead next again finish finished complete completed keep going carry on
do it make sure try work working works worked thing things stuff something anything everything
problem problems issue issues question questions help want wanted wants way ways time times
also still already actually basically just simply maybe probably
"""

_IT = """
a ad al alla alle allo agli ai anche ancora avere aveva avevo c che chi ci come con contro cosa
cui da dal dalla dalle dallo dagli dai degli dei del della delle dello di dove e ed era erano
essere fa fare fatto gli ha hai hanno ho i il in io la le lei li lo loro lui ma me mi mia mie
miei mio ne negli nei nel nella nelle nello no noi non nostra nostre nostri nostro o per perche
piu poi puo qua quale quali qualche quando quanto quella quelle quelli quello questa queste
questi questo qui se sei si sia siamo sono sta stai stanno stato su sua sue sugli sui sul sulla
sulle sullo suo suoi te ti tra tu tua tue tuo tuoi tutta tutte tutti tutto un una uno vi voi
vostra vostro gia sempre mai molto poco adesso ora dopo prima senza solo volta volte tutto
grazie perfetto bene va vabbe certo ok si esatto giusto capito fatto fatta
posso puoi possiamo potresti vorrei voglio devo dobbiamo bisogna serve servono
problema problemi cosa cose modo fai fate continua procedi avanti finisci completa
"""

STOPWORDS: frozenset[str] = frozenset(fold(w) for w in (_EN + _IT).split())


def is_stopword(term: str) -> bool:
    """True for a (folded or not) word in the English or Italian list."""
    return fold(term) in STOPWORDS
