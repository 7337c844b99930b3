#!/usr/bin/env python3
"""Reads the stage records a -DMPIX_STAGE_TRACE build of libmpix writes
($MPIX_STAGE_TRACE_FILE.<pid>: globaltimer ns, clock64, stage id, block;
the ids are the MPIX_STAGE(...) marks of device/stream_exec.cu) and prints,
per file, the median time of every stage after the repetition's first mark
(--start, default 10: a pulled Isend's kernel starting), over the last
--last repetitions, and the median step from each stage to the next one
seen. Stages of different blocks are told apart as id@block.

  bench/stage_timeline.py FILE... [--start 10] [--last 150]
"""
import argparse
import collections
import statistics

NAMES = {
    10: 'isend(pull) kernel: entry', 11: 'isend: previous kernel done', 12: 'isend: entry posted',
    13: 'isend: exit', 15: 'start kernel: entry', 16: 'start: previous kernel done',
    20: 'wait kernel: entry', 21: 'wait: previous kernel done', 22: 'wait: receives started',
    23: 'wait: exit', 30: 'wait: request 0 complete', 31: 'wait: request 1 complete',
    32: 'wait: request 2 complete', 33: 'wait: request 3 complete',
    17: 'start: exit', 43: 'medium receive: lines to copy', 44: 'medium receive: lines copied',
    45: 'medium send: lines to write', 46: 'medium send: lines written',
    40: 'pulled receive bound (entry seen)', 41: 'pulled receive copied', 42: 'pulled receive signalled',
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('files', nargs='+')
    ap.add_argument('--start', type=int, default=10)
    ap.add_argument('--last', type=int, default=150)
    a = ap.parse_args()
    for path in a.files:
        recs = []
        with open(path) as f:
            for line in f:
                t, _clk, sid, block = (int(x) for x in line.split(','))
                recs.append((t, sid, block))
        recs.sort()
        reps, cur = [], None
        for t, sid, block in recs:
            if sid == a.start:
                cur = {}
                reps.append(cur)
            if cur is None:
                continue
            key = (sid, block)
            cur.setdefault(key, t)
        reps = reps[-a.last - 1:-1]  # the last one may be cut short
        if not reps:
            print(f'{path}: no repetitions')
            continue
        offs = collections.defaultdict(list)
        for r in reps:
            t0 = r.get((a.start, 0))
            if t0 is None:
                continue
            for key, t in r.items():
                offs[key].append((t - t0) / 1000)
        period = [(reps[i + 1][(a.start, 0)] - reps[i][(a.start, 0)]) / 1000 for i in range(len(reps) - 1)]
        print(f'{path}: {len(reps)} repetitions, {statistics.median(period):.2f} us apart (median)')
        rows = sorted(((statistics.median(v), k, len(v)) for k, v in offs.items()))
        prev = None
        for m, (sid, block), n in rows:
            step = f'{m - prev:+7.2f}' if prev is not None else '       '
            print(f'  {m:8.2f} us {step}  {NAMES.get(sid, str(sid)):<36} @block {block} ({n})')
            prev = m


if __name__ == '__main__':
    main()
