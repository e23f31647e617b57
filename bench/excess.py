"""The device-wide figure's excess over the current stream's, per record and timed side.

Usage: python3 bench/excess.py RECORD.json...   (kbv eval --json records, verified on the GPU)

Per side: the current stream's median, the median of each sample's device-wide figure less its
current-stream figure, how many samples had none, the idle wait the host's figure takes off
(timing.*.clock.idle_sync_seconds) and the context event's latency taken off each of its samples
(timing.*.clock.context_latency_seconds; 0 where the end was not on the device), in us. Where the
device-wide end was a context event (timing.*.clock.device_end), also how many samples took it and
the host wait's excess beside it (the figure those samples would have had). docs/performance.md,
"The device-wide end", reads these.
"""
import json
import statistics
import sys

if len(sys.argv) < 2:
    sys.exit(__doc__)
for path in sys.argv[1:]:
    timing = json.load(open(path)).get("timing") or {}
    for side in ("baseline", "candidate"):
        measured = timing.get(side)
        if not measured or not measured["clock"].get("device_sync"):
            continue
        excess = [a - b for a, b in zip(measured["samples_seconds"], measured["stream_samples_seconds"])]
        line = (f"{path.split('/')[-1][:46]:46} {side:9} stream "
                f"{statistics.median(measured['stream_samples_seconds']) * 1e3:8.4f} ms  "
                f"excess {statistics.median(excess) * 1e6:6.2f} us  none {sum(e == 0 for e in excess):3}/{len(excess):3}  "
                f"idle {measured['clock']['idle_sync_seconds'] * 1e6:.2f}"
                f"  event latency {measured['clock'].get('context_latency_seconds', 0) * 1e6:.2f}")
        if "host_wait_samples_seconds" in measured:
            waited = [a - b for a, b in zip(measured["host_wait_samples_seconds"], measured["stream_samples_seconds"])]
            line += (f"  on device {measured['end_on_device_samples']:3}/{len(excess):3}"
                     f"  host wait's excess {statistics.median(waited) * 1e6:6.2f} us")
        print(line)
