#!/usr/bin/env bash
# Install WordNet 3.0 for nltk's METEOR from Debian's `wordnet-base` + `wordnet-sense-index` packages (no nltk downloader: these
# machines reach the package registries only).
#
#   scripts/setup_nltk_data.sh [VENV]        (VENV defaults to ./.venv; run as root on Debian/Ubuntu)
#
# The files are copied (nltk 3.10 refuses symlinks leaving its data folder) into
# <VENV>/share/nltk_data/corpora/wordnet/, a folder nltk searches (sys.prefix/share/nltk_data).
# Debian does not ship nltk's `lexnames` file; it is rebuilt from lexnames.5WN.gz (or, where man pages are
# excluded, as in slim Docker images, from the fixed WordNet 3.0 table below). nltk 3.10's reader also needs
# index.sense (package wordnet-sense-index) when it loads.
# Idempotent: re-running it refreshes the copy.
set -euo pipefail

VENV="${1:-${VENV:-.venv}}"
DEST="$VENV/share/nltk_data/corpora/wordnet"
SRC=/usr/share/wordnet

if [ ! -f "$SRC/data.noun" ] || [ ! -f "$SRC/index.sense" ]; then
    if [ "$(id -u)" != "0" ]; then
        echo "setup_nltk_data: WordNet is not installed; run as root (it runs apt-get install wordnet-base)" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y --no-install-recommends wordnet-base wordnet-sense-index >/dev/null 2>&1; then
        apt-get update -qq
        apt-get install -y --no-install-recommends wordnet-base wordnet-sense-index >/dev/null
    fi
fi

mkdir -p "$DEST"
for f in "$SRC"/data.* "$SRC"/index.* "$SRC"/*.exc "$SRC"/cntlist.rev "$SRC"/index.sense; do
    [ -e "$f" ] && cp -fL "$f" "$DEST/"
done

# lexnames: "NN<TAB>lexname<TAB>POS" lines. Debian ships the table in the lexnames(5WN) man page.
LEXMAN="$(find /usr/share/man -iname 'lexnames.5*' 2>/dev/null | head -n1 || true)"
if [ -n "$LEXMAN" ]; then
    zcat -f "$LEXMAN" | awk '
        BEGIN { pos["noun"] = 1; pos["verb"] = 2; pos["adj"] = 3; pos["adv"] = 4 }
        match($0, /^[0-9][0-9][ \t]+(adj|adv|noun|verb)\.[A-Za-z]+/) {
            split($0, a, /[ \t]+/);
            split(a[2], b, ".");
            printf "%s\t%s\t%d\n", a[1], a[2], pos[b[1]];
        }' > "$DEST/lexnames"
else
    # WordNet 3.0's fixed table (identical to what the man page yields).
    cat > "$DEST/lexnames" <<'LEXNAMES'
00	adj.all	3
01	adj.pert	3
02	adv.all	4
03	noun.Tops	1
04	noun.act	1
05	noun.animal	1
06	noun.artifact	1
07	noun.attribute	1
08	noun.body	1
09	noun.cognition	1
10	noun.communication	1
11	noun.event	1
12	noun.feeling	1
13	noun.food	1
14	noun.group	1
15	noun.location	1
16	noun.motive	1
17	noun.object	1
18	noun.person	1
19	noun.phenomenon	1
20	noun.plant	1
21	noun.possession	1
22	noun.process	1
23	noun.quantity	1
24	noun.relation	1
25	noun.shape	1
26	noun.state	1
27	noun.substance	1
28	noun.time	1
29	verb.body	2
30	verb.change	2
31	verb.cognition	2
32	verb.communication	2
33	verb.competition	2
34	verb.consumption	2
35	verb.contact	2
36	verb.creation	2
37	verb.emotion	2
38	verb.motion	2
39	verb.perception	2
40	verb.possession	2
41	verb.social	2
42	verb.stative	2
43	verb.weather	2
44	adj.ppl	3
LEXNAMES
fi

N=$(wc -l < "$DEST/lexnames")
if [ "$N" -ne 45 ]; then
    echo "setup_nltk_data: expected 45 lexnames, got $N from $LEXMAN" >&2
    exit 1
fi
echo "setup_nltk_data: WordNet installed in $DEST"
