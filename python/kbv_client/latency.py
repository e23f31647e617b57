"""Where the time a client waits beyond its evaluation goes: answers' spans, split and summarised."""

PARTS = ("added", "admission", "hand_over", "outside")


def parts(answer):
    """One answer of `Client.evaluate` (with "client_seconds"), in seconds: what the service added
    beyond the queue and the evaluation ("added"), and its parts: "admission" (body parsed, file
    written, rows stored), "hand_over" (from the evaluation's end to the answer's encoding, in the
    service) and "outside" (the connection, the transfer and this client's decoding: the round trip
    less the service's own seconds)."""
    spans = answer["admission_seconds"] + answer["queued_seconds"] + answer["evaluation_seconds"]
    return {"added": answer["client_seconds"] - answer["queued_seconds"] - answer["evaluation_seconds"],
            "admission": answer["admission_seconds"],
            "hand_over": answer["service_seconds"] - spans,
            "outside": answer["client_seconds"] - answer["service_seconds"]}


def describe(answers):
    """Median and p95 of each part over `answers`, in milliseconds, and the three slowest requests."""
    each = [parts(a) for a in answers]

    def median_p95(name):
        ordered = sorted(p[name] for p in each)
        return 1e3 * ordered[len(ordered) // 2], 1e3 * ordered[int(len(ordered) * 0.95)]

    line = "added per request: median %.1f ms, p95 %.1f ms (" % median_p95("added")
    line += ", ".join("%s: median %.1f ms, p95 %.1f ms" % ((name.replace("_", "-"),) + median_p95(name))
                      for name in PARTS[1:])
    slowest = sorted(range(len(each)), key=lambda i: each[i]["added"], reverse=True)[:3]
    return line + "); slowest: " + ", ".join(
        "#%d %.1f ms (outside %.1f)" % (i, 1e3 * each[i]["added"], 1e3 * each[i]["outside"]) for i in slowest)
