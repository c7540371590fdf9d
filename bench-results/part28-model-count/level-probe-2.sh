#!/bin/sh
# The node-count edge: a 5-layer tiny MLP (9 nodes) and one transformer-like layer (16 nodes).
cd "$(dirname "$0")"
for spec in mlp5:1000 block1:1000; do
  m=${spec%%:*}; n=${spec##*:}
  for rep in 1 2; do for level in all basic; do node --expose-gc level-probe.js mem $m $level $n; done; done
done
for m in mlp5 block1; do node level-probe.js run $m 5; done
