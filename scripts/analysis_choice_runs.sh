#!/bin/bash
# Issue 39 (docs/EVALUATION.md, "The analyzer and embedder chosen from the documents"): one labelled set's default row,
# hybrid eval with no --analyzer / --embedder and with each hand-chosen pair, under nice; run from the repository root:
#   OPENSEARCH_URL=... [ROW=hybrid-adaptive] [PREFIX=ac] [NICE=19] [EMBEDDERS="multilingual-e5-small minilm"] [AUTO=1] \
#     [STEMS=polish_stems] scripts/analysis_choice_runs.sh SET PATH LANGUAGE_ANALYZER [eval flags, e.g. --no-titles]
# (ROW: the default row's technique; hybrid-adaptive on OpenSearch 2.19 and Elasticsearch, where the default fusion is
# not min_max-named; PREFIX: of the eval indexes' names; EMBEDDERS: the hand-chosen pairs' embedders; AUTO=0: the
# automatic run's json/ is there already; the URL may be an Elasticsearch node's: eval reads the engine; STEMS: candidate
# E's analyzer, run with multilingual-e5-small only, right after the automatic run)
# then: .venv/bin/python scripts/study_analysis_choice.py --reports out/analysis-choice/reports
set -u
: "${OPENSEARCH_URL:?the cluster to measure on}"
name=$1; path=$(realpath "$2"); lang=$3; shift 3; extra="$*"  # lang "-": the cluster has no analyzer for the language
OUT=${OUT:-out/analysis-choice}; mkdir -p "$OUT"; ROOT=$(pwd); cd "$OUT"
H=${HYBRID:-$ROOT/.venv/bin/hybrid}  # HYBRID: another launcher, e.g. one of a frozen copy of the tree
run() { # tag, flags...
  tag=$1; shift
  idx="${PREFIX:-ac}-$name-$tag"
  start=$(date +%s)
  nice -n "${NICE:-19}" $H eval --dataset "$path" --index "$idx" --techniques bm25,dense,${ROW:-hybrid-adaptive-min_max} \
     --cache emb.sqlite --json "json/$name-$tag.json" --report "reports/$name-$tag" -q $extra "$@" > "logs/$name-$tag.log" 2>&1
  rc=$?
  echo "$(date -Is) $name $tag rc=$rc $(( $(date +%s) - start ))s load=$(cut -d' ' -f1-3 /proc/loadavg) $(grep -m1 '^analyzer:' logs/$name-$tag.log)" >> times.log
  clean "$idx"
}
clean() { # what the eval left on the cluster: <idx>-combined-v1 and its templates and search pipelines
  local names
  names=$(curl -s "$OPENSEARCH_URL/_cat/indices/$1-*?h=index" | tr '\n' ' ')
  for i in $names; do curl -s -XDELETE "$OPENSEARCH_URL/$i" > /dev/null; done
  for kind in _index_template _component_template; do
    names=$(curl -s "$OPENSEARCH_URL/$kind/$1-*" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(t["name"] for v in d.values() for t in v))')
    for t in $names; do curl -s -XDELETE "$OPENSEARCH_URL/$kind/$t" > /dev/null; done
  done
  # search pipelines: OpenSearch only (Elasticsearch answers an error object, whose keys are no pipelines)
  names=$(curl -s "$OPENSEARCH_URL/_search/pipeline/$1-*" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("" if "error" in d else " ".join(d))')
  for p in $names; do curl -s -XDELETE "$OPENSEARCH_URL/_search/pipeline/$p" > /dev/null; done
}
mkdir -p json logs reports
[ "${AUTO:-1}" = 1 ] && run auto
a=$(python3 -c "import json; print(json.load(open('json/$name-auto.json'))['settings']['analyzer'])" 2>/dev/null)
e=$(python3 -c "import json; print(json.load(open('json/$name-auto.json'))['embedder'])" 2>/dev/null)
[ -n "${STEMS:-}" ] && run "$STEMS-multilingual" --analyzer "$STEMS" --embedder multilingual-e5-small
for an in $lang folding; do
  [ "$an" = "-" ] && continue
  for em in ${EMBEDDERS:-multilingual-e5-small minilm}; do
    tag="$an-${em%%-*}"
    if [ "$an" = "$a" ] && [[ "$e" == *"${em}"* || ( "$em" = minilm && "$e" == *MiniLM* ) ]]; then
      echo "$(date -Is) $name $tag = auto" >> times.log; continue
    fi
    run "$tag" --analyzer "$an" --embedder "$em"
  done
done
