#!/usr/bin/python3
"""botocore's adaptive-mode rate limiter on a scripted clock (docs/conformance.md).

Run with Debian's /usr/bin/python3 (python3-botocore). Builds the pieces of
botocore/retries/adaptive.py register_retry_handler (ClientRateLimiter,
CubicCalculator, TokenBucket, RateClocker) on a clock that only the script
moves, and replays the events of the file named on the command line: a JSON
list of {"t": seconds, "op": "send"} and {"t": seconds, "op": "response",
"throttled": bool}. An event happens at max(t, the clock): a send that had to
wait for its token moved the clock. Prints one JSON line per event.
"""
import json
import math
import sys

from botocore.retries import adaptive, bucket, throttling


class ScriptedClock:
    def __init__(self):
        self.t = 0.0

    def current_time(self):
        return self.t

    def sleep(self, amount):
        # At least one step of the float: a wait shorter than that would leave
        # TokenBucket._acquire's loop where it is.
        self.t = max(self.t + amount, math.nextafter(self.t, math.inf))


class Detector:
    """Stands for standard.ThrottlingErrorDetector: the script says."""

    def is_throttling_error(self, **kwargs):
        return kwargs["throttled"]


def main():
    with open(sys.argv[1]) as f:
        events = json.load(f)
    clock = ScriptedClock()
    token_bucket = bucket.TokenBucket(max_rate=1, clock=clock)
    # TokenBucket._acquire waits on its condition for the refill: the wait
    # moves the scripted clock instead.
    token_bucket._new_fill_rate_condition.wait = lambda timeout=None: clock.sleep(timeout or 0)
    limiter = adaptive.ClientRateLimiter(
        rate_adjustor=throttling.CubicCalculator(starting_max_rate=0,
                                                 start_time=clock.current_time()),
        rate_clocker=adaptive.RateClocker(clock),
        token_bucket=token_bucket,
        throttling_detector=Detector(),
        clock=clock)
    for e in events:
        clock.t = max(clock.t, float(e["t"]))
        if e["op"] == "send":
            limiter.on_sending_request(request=None)
            out = {"sent_at": clock.t}
        else:
            limiter.on_receiving_response(throttled=bool(e["throttled"]))
            out = {"rate": token_bucket.max_rate, "enabled": limiter._enabled}
        sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
