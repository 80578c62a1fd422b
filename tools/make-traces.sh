#!/bin/sh
# Remake the shipped synthetic traces (data/traces/*.umt) with `umadv synth`.
# The output depends on the arguments below alone, so running this again
# gives byte-identical files; tests/test_cli.sh checks that the shipped
# files are what this script makes.
#
# usage: tools/make-traces.sh UMADV OUTDIR
set -eu

if [ $# -ne 2 ]; then
    echo "usage: $0 UMADV OUTDIR" >&2
    exit 2
fi
umadv=$1
out=$2
mkdir -p "$out"

# name model arguments: each file stays under 2 MB (the repository ships them)
while read -r name model args; do
    # shellcheck disable=SC2086 # args is a word list on purpose
    "$umadv" synth "$model" $args -o "$out/$name"
done <<'LIST'
vgg16-bs256.umt      vgg16       --batch 256
resnet50-bs256.umt   resnet50    --batch 256
gpt2-bs8.umt         gpt2        --batch 8
resnet-deep-1001.umt resnet-deep --depth 1001 --batch 256
LIST
