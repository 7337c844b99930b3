#!/usr/bin/env python3
"""Reads the CSVs bench/libktrace.so wrote for one run (a directory of
ktrace.<rank>.<pid>.csv) and prints, per rank, where a repeated sequence of
kernels on the busiest stream spends its time: each kernel's median
duration and the median gap before it (the previous kernel's end to its
start), over the last --last repetitions of the kernel named by --period
(default: the most frequent name). With KTRACE_API's records, also the
median host time of the launch calls.

  bench/ktrace_timeline.py DIR [--last 150] [--period stencil]
"""
import argparse
import collections
import glob
import os
import re
import statistics


def short(name):
    """A readable kernel name: the last identifier before the parameters."""
    if name.startswith('_Z'):
        # Itanium names: pick <len><identifier> pieces, keep the last one
        # that is not a namespace-looking or hash piece.
        pieces = []
        i = name.find('N') + 1 if 'N' in name[:4] else 2
        while i < len(name):
            m = re.match(r'(\d+)', name[i:])
            if not m:
                break
            n = int(m.group(1))
            i += len(m.group(1))
            pieces.append(name[i:i + n])
            i += n
        pieces = [p for p in pieces if not p.startswith('_GLOBAL__N')]
        if pieces:
            return pieces[-1]
    return name.split('(')[0][:40]


def load(path):
    kernels, api = [], []
    with open(path) as f:
        for line in f:
            parts = line.rstrip('\n').split(',', 9)
            if parts[0] == 'kernel' and len(parts) == 10:
                kernels.append((int(parts[3]), int(parts[4]), int(parts[2]), short(parts[9]), int(parts[7])))
            elif parts[0] == 'api' and len(parts) == 10:
                api.append((int(parts[2]), int(parts[3]), int(parts[4])))
    return kernels, api


def med(xs):
    return statistics.median(xs) if xs else float('nan')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('dir')
    ap.add_argument('--last', type=int, default=150)
    ap.add_argument('--period', default=None)
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.dir, 'ktrace.*.csv')))
    for path in files:
        rank = os.path.basename(path).split('.')[1]
        kernels, api = load(path)
        if not kernels:
            print(f'rank {rank}: no kernels')
            continue
        streams = collections.Counter(k[2] for k in kernels)
        sid = streams.most_common(1)[0][0]
        ks = sorted(k for k in kernels if k[2] == sid)
        names = collections.Counter(k[3] for k in ks)
        period = a.period or names.most_common(1)[0][0]
        marks = [i for i, k in enumerate(ks) if period in k[3]]
        if len(marks) < 2:
            print(f'rank {rank}: fewer than two "{period}" kernels')
            continue
        first = marks[max(0, len(marks) - 1 - a.last)]
        window = ks[first:marks[-1]]
        reps = sum(1 for k in window if period in k[3])
        per = (ks[marks[-1]][0] - ks[first][0]) / 1000 / max(reps, 1)
        dur, gap, prev = collections.defaultdict(list), collections.defaultdict(list), {}
        order = []
        for j, k in enumerate(window):
            if k[3] not in order:
                order.append(k[3])
            dur[k[3]].append((k[1] - k[0]) / 1000)
            p = ks[first + j - 1] if first + j > 0 else None
            if p is not None:
                gap[k[3]].append((k[0] - p[1]) / 1000)
                prev[k[3]] = p[3]
        busy = sum(med(dur[n]) * len(dur[n]) for n in order) / max(reps, 1)
        print(f'rank {rank}: stream {sid}, {reps} repetitions of "{period}", {per:.2f} us each '
              f'(kernels running {busy:.2f} us of it)')
        print(f'  {"kernel":<28} {"count":>6} {"median us":>10} {"gap before":>11}  after')
        for n in order:
            print(f'  {n:<28} {len(dur[n]):>6} {med(dur[n]):>10.2f} {med(gap[n]):>11.2f}  {prev.get(n, "-")}')
        if api:
            t0, t1 = ks[first][0], ks[marks[-1]][0]
            calls = collections.defaultdict(list)
            for cbid, s, e in api:
                if t0 <= s <= t1:
                    calls[cbid].append((e - s) / 1000)
            print('  host API calls in the window (CUPTI runtime callback id: count, median us, total per repetition):')
            for cbid, xs in sorted(calls.items(), key=lambda kv: -sum(kv[1])):
                print(f'    cbid {cbid:>4}: {len(xs):>6} {med(xs):>8.2f} {sum(xs) / max(reps, 1):>8.2f}')


if __name__ == '__main__':
    main()
