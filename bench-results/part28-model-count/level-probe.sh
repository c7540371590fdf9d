#!/bin/sh
# Every model of level-probe.js at both levels: memory (2 interleaved runs each) then run time (5 interleaved rounds).
cd "$(dirname "$0")"
node level-probe.js sizes
for spec in tiny:1000 small:300 block:300 paddle:40 mlp256:20 mid:4 big:2; do
  m=${spec%%:*}; n=${spec##*:}
  for rep in 1 2; do for level in all basic; do node --expose-gc level-probe.js mem $m $level $n; done; done
done
for m in tiny small block paddle mlp256 mid big; do node level-probe.js run $m 5; done
