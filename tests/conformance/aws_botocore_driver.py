#!/usr/bin/python3
"""Drives a real botocore client against the scripted server (docs/conformance.md).

Run with Debian's /usr/bin/python3 (python3-botocore). The retry settings come
from an AWS shared config file (--config, read through AWS_CONFIG_FILE), the
same text the C++ test imports, so `max_attempts` counts attempts as the file
does. The client is CloudWatch Logs (JSON 1.1, no retry table of its own in
botocore/data/_retry.json) with dummy credentials; each call's id goes out in
`x-rs-request` from a before-send hook, and botocore itself sends
`amz-sdk-request: attempt=N; max=M`.

--no-sleep: time.sleep (botocore/endpoint.py Endpoint._needs_retry sleeps the
backoff) records the delay instead of sleeping; the delay is still computed by
botocore's own code. --virtual-time additionally gives the adaptive rate limiter
(botocore/retries/adaptive.py, bucket.py) a clock that the recorded sleeps and
its own waits advance, so its token-bucket waits are measured, not slept.

Prints one JSON document on stdout.
"""
import argparse
import json
import os
import random
import sys
import threading
import time

# The environment must not pick retry settings, credentials or a proxy.
for _name in ("AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
              "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY",
              "all_proxy"):
    os.environ.pop(_name, None)
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

import botocore  # noqa: E402
import botocore.config  # noqa: E402
import botocore.exceptions  # noqa: E402
import botocore.session  # noqa: E402
from botocore.retries import bucket, quota, standard  # noqa: E402


class VirtualClock:
    """Real monotonic time plus what recorded sleeps and limiter waits skipped."""

    skipped = 0.0

    def current_time(self):
        return time.monotonic() + VirtualClock.skipped

    def sleep(self, amount):
        VirtualClock.skipped += amount


class State:
    call = None  # the call in progress (a dict of the output)
    quotas = []  # every RetryQuota botocore created, in order (one per client)


class RecordingQuota(quota.RetryQuota):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        State.quotas.append(self)


class VirtualCondition(threading.Condition):
    """TokenBucket._acquire waits on its condition for the refill; skip it."""

    def wait(self, timeout=None):
        if State.call is not None:
            State.call["limiter_waits"].append(timeout)
        VirtualClock.skipped += timeout or 0
        return False


class ThreadingShim:
    Lock = threading.Lock
    Condition = VirtualCondition


def install_sleep_recorder(skip_sleep):
    real_sleep = time.sleep

    def recording_sleep(seconds):
        if State.call is not None:
            State.call["delays"].append(seconds)
        if skip_sleep:
            VirtualClock.skipped += seconds
        else:
            real_sleep(seconds)

    time.sleep = recording_sleep


def make_client(session, args):
    config = botocore.config.Config(
        connect_timeout=args.connect_timeout,
        read_timeout=args.read_timeout,
        tcp_keepalive=False,
    )
    client = session.create_client(
        "logs", region_name="us-east-1", endpoint_url=args.endpoint,
        aws_access_key_id="AKIDRETRYSTORM", aws_secret_access_key="secret",
        config=config)

    def tag(request, **_kwargs):
        request.headers["x-rs-request"] = State.call["id"]
        State.call["sent"] += 1
        State.call["send_ms"].append(round((time.monotonic() - State.call["t0"]) * 1000, 3))

    client.meta.events.register("before-send.cloudwatch-logs", tag)
    return client


def run_call(client, call_id, quota_of_client):
    State.call = {"id": call_id, "ok": False, "error": None, "status": None, "sent": 0,
                  "delays": [], "limiter_waits": [], "send_ms": [],
                  "t0": time.monotonic()}
    call = State.call
    try:
        response = client.describe_log_groups()
        call["ok"] = True
        call["status"] = response["ResponseMetadata"]["HTTPStatusCode"]
        call["retry_attempts"] = response["ResponseMetadata"].get("RetryAttempts")
    except botocore.exceptions.ClientError as e:
        call["error"] = e.response.get("Error", {}).get("Code")
        call["status"] = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        call["retry_attempts"] = e.response.get("ResponseMetadata", {}).get("RetryAttempts")
    except botocore.exceptions.BotoCoreError as e:
        call["error"] = type(e).__name__
    call["elapsed_ms"] = round((time.monotonic() - call.pop("t0")) * 1000, 3)
    call["quota"] = quota_of_client.available_capacity if quota_of_client else None
    State.call = None
    return call


def backoff_samples(attempt_number, samples):
    """botocore/retries/standard.py ExponentialBackoff.delay_amount, called directly."""

    class Context:
        pass

    ctx = Context()
    ctx.attempt_number = attempt_number
    backoff = standard.ExponentialBackoff()
    return [backoff.delay_amount(ctx) for _ in range(samples)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint")
    p.add_argument("--config", help="AWS shared config file with retry_mode / max_attempts")
    p.add_argument("--calls", type=int, default=0)
    p.add_argument("--calls-per-client", type=int, default=0, help="0: one client")
    p.add_argument("--prefix", default="c")
    p.add_argument("--read-timeout", type=float, default=60)
    p.add_argument("--connect-timeout", type=float, default=60)
    p.add_argument("--no-sleep", action="store_true")
    p.add_argument("--virtual-time", action="store_true")
    p.add_argument("--backoff-samples", type=int, default=0,
                   help="also sample delay_amount for --backoff-attempts")
    p.add_argument("--backoff-attempts", default="")
    p.add_argument("--seed", type=int, default=12,
                   help="seeds the random module botocore draws its jitter from, so runs repeat")
    args = p.parse_args()
    random.seed(args.seed)  # ExponentialBackoff's default source is random.random

    if args.config:
        os.environ["AWS_CONFIG_FILE"] = args.config
    else:
        os.environ["AWS_CONFIG_FILE"] = os.devnull
    install_sleep_recorder(args.no_sleep or args.virtual_time)
    quota.RetryQuota = RecordingQuota  # standard.register_retry_handler reads it here
    if args.virtual_time:
        bucket.Clock = VirtualClock  # adaptive.register_retry_handler builds its clock from it
        bucket.threading = ThreadingShim

    out = {"botocore": botocore.__version__, "calls": []}
    session = botocore.session.get_session()
    client, client_index, quota_of_client = None, -1, None
    for i in range(args.calls):
        if client is None or (args.calls_per_client and i % args.calls_per_client == 0):
            before = len(State.quotas)
            client = make_client(session, args)
            client_index += 1
            quota_of_client = State.quotas[-1] if len(State.quotas) > before else None
            out["retry_mode"] = client.meta.config.retries.get("mode")
            out["total_max_attempts"] = client.meta.config.retries.get("total_max_attempts")
        call = run_call(client, f"{args.prefix}-{i}", quota_of_client)
        call["client"] = client_index
        out["calls"].append(call)
    if args.backoff_samples:
        out["backoff"] = {a: backoff_samples(int(a), args.backoff_samples)
                          for a in args.backoff_attempts.split(",") if a}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
