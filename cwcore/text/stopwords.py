"""English and Italian stopwords: grammar, workflow words, acknowledgements, generic requests.

Used by query extraction (a message made only of these has no topic) and by the BM25 handler
(when a window has more unique terms than it may keep, these go first). Lookup is on folded
terms (case-, accent- and compatibility-insensitive, see :func:`cwcore.text.tokenize.fold`), so
``Perché``, ``PERCHE`` and full-width ``ｏｋ`` all hit the list; the literal text of a message
is never rewritten by the lookup.

The lists hold what is never topic evidence in a request to a coding agent:

* grammar (articles, pronouns, auxiliaries, prepositions, conjunctions, common adverbs);
* workflow and generic request words (``continue``, ``procedi``, ``fix``, ``check``, ``posso``,
  ``solo``, ``senza``, ``without``, ``problem``/``problema``, ``volta``, ``tutte``) — a request
  to "fix it again" names no topic and must not search for earlier failures or approvals;
* acknowledgements (``ok``, ``thanks``, ``sounds good``, ``grazie``, ``va bene``, ``perfetto``);
* the words of historical cues (``last time``, ``remember``, ``avevamo deciso``): the cue routes
  the request (see :mod:`cwcore.hints.query`) but is not what it is about.

UI words (``schermate``, ``premere``, ``input``, ``button``, ``screen``) are deliberately absent:
they are topics.
"""

from __future__ import annotations

from cwcore.text.tokenize import fold

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
"""

_EN_CHAT = """
ok okay k kk yes yeah yep yup sure thanks thank thx ty cool great nice good fine perfect awesome
alright right got understood sounds done agreed gotcha indeed hello hi hey please pls lgtm
excellent wonderful amazing brilliant exactly correct true false
continue proceed go ahead next again finish finished complete completed keep going carry on
do it make sure try tried trying work working works worked thing things stuff something anything
everything nothing problem problems issue issues question questions help want wanted wants way
ways time times also still already actually basically just simply maybe probably
fix fixes fixed fixing bug bugs broken break breaks fail fails failed failing failure error
errors wrong look looks check checks see show tell explain change changes changed update
updates use using used add remove create make makes made write run runs running ran start
implement implemented give take put let now today tomorrow yesterday soon later first last
earlier previously remember remembered recall decided decide discussed discuss said say says
mentioned mention agreed agree talked talk told tell back ago
can could would should shall will might must may able
one two three lot lots bit little many much
"""

_IT = """
a ad al alla alle allo agli ai anche ancora avere aveva avevo c che chi ci come con contro cosa
cui da dal dalla dalle dallo dagli dai degli dei del della delle dello di dove e ed era erano
essere fa fare fatto gli ha hai hanno ho i il in io la le lei li lo loro lui ma me mi mia mie
miei mio ne negli nei nel nella nelle nello no noi non nostra nostre nostri nostro o per perche
piu poi puo qua quale quali qualche quando quanto quella quelle quelli quello questa queste
questi questo qui se sei si sia siamo sono sta stai stanno stato su sua sue sugli sui sul sulla
sulle sullo suo suoi te ti tra tu tua tue tuo tuoi tutta tutte tutti tutto un una uno vi voi
vostra vostro gia sempre mai molto poco adesso ora dopo prima senza solo volta volte
"""

_IT_CHAT = """
grazie mille perfetto perfetta ottimo ottima benissimo bravo brava bene va vabbe vabbene certo
certamente ok si esatto esatta giusto giusta capito chiaro fatto fatta fatti accordo daccordo
posso puoi possiamo potete potresti potrei vorrei voglio vuoi devo devi dobbiamo bisogna serve
servono deve devono puo possono sarebbe sarebbero faccio facciamo fallo falla fai fate vai
andiamo dai pure su avanti farlo farla farli rifarlo rifai rifare continua continuiamo procedi
procediamo prosegui finisci finiamo
completa completiamo termina sistema sistemalo correggi correggilo aggiusta aggiustalo prova
proviamo riprova riprovare vedi vediamo guarda guardiamo controlla controlliamo dimmi fammi
spiega spiegami aggiungi rimuovi togli usa usare cambia modifica aggiorna
problema problemi errore errori cosa cose modo roba niente nulla qualcosa tutto ogni
altra altro altri altre ultima ultimo ultime ultimi stessa stesso stessi stesse
ricordi ricorda ricordo ricordare deciso decisa decidere avevamo avevate abbiamo avete
detto dicevamo parlato discusso precedenza precedentemente
cosi ecco allora quindi pero comunque davvero forse magari anzi infatti invece oppure
ancora oggi ieri domani subito poi tanto troppo bisogno
funziona funzionano funzionare rotto rotta
"""

STOPWORDS: frozenset[str] = frozenset(fold(w) for w in (_EN + _EN_CHAT + _IT + _IT_CHAT).split())
#: Grammar alone (articles, pronouns, auxiliaries, prepositions, conjunctions, common adverbs):
#: what explicit search drops from a query. Workflow words such as ``error``, ``fail`` or
#: ``first`` carry meaning in a search for something specific, so they stay.
GRAMMAR: frozenset[str] = frozenset(fold(w) for w in (_EN + _IT).split())


def is_stopword(term: str) -> bool:
    """True for a (folded or not) word in the English or Italian list."""
    return fold(term) in STOPWORDS
