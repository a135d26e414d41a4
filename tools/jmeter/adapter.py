"""Apache JMeter: Java, one thread per virtual user, non-GUI mode, per-sample JTL (CSV) log."""
import csv
from collections import Counter
from urllib.parse import urlsplit

from harness.stats import DEFINITION, latency_metrics
from harness.tools import Metrics, ParseError, RunSpec, ToolAdapter, ToolOutput

JTL, LOG = "jmeter.jtl", "jmeter.log"
RAMP_UP_S = 1                     # the study started its threads over 1 s
# JVM options of JMeter 5.6.3's own bin/jmeter start script (its defaults, unchanged), so the
# memory figures are those of a stock `jmeter -n` run.
HEAP = ["-Xms1g", "-Xmx1g", "-XX:MaxMetaspaceSize=256m"]
GC = ["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=100", "-XX:G1ReservePercent=20"]
# JTL columns: what the parser needs (timeStamp, elapsed, success, ...) and little else, which keeps
# the log about a third of JMeter's default row size.
JTL_FIELDS = {
    "timestamp": True, "time": True, "successful": True, "response_code": True, "connect_time": True,
    "latency": True, "thread_name": True, "assertion_results_failure_message": True,
    "label": False, "response_message": False, "data_type": False, "bytes": False, "sent_bytes": False,
    "url": False, "thread_counts": False, "idle_time": False,
}
STEPS = {"login": "login", "api_get": "get"}   # Metrics' lat_<step>_* -> plan-flow.jmx's sampler label
JVM = ["-server", *HEAP, *GC, "-Djava.security.egd=file:/dev/urandom", "-Duser.language=en", "-Duser.region=EN"]


class JMeter(ToolAdapter):
    name = "jmeter"
    version_args = ["-j", "/dev/null", "--version"]
    concurrency_model = (f"ThreadGroup of VUs threads (one keep-alive connection each) started over {RAMP_UP_S} s, "
                         "scheduler duration, loops forever")
    timing_resolution_ms = 1  # JTL 'elapsed' in whole ms

    open_model = True
    rate_schedule = "poisson"   # the Precise Throughput Timer's arrivals
    rate_model = ("Precise Throughput Timer (plan-rate.jmx): rate samples/s in total, Poisson arrivals, over VUs threads; "
                  "a sample due while every thread is busy waits, latency counts from the actual send")
    # -Jkeepalive=false: the plans' use_keepalive (${__P(keepalive,true)}) off, so HttpClient4 sends
    # Connection: close and opens a new connection for every sample.
    keepalive_off = True
    tls = True   # -Jprotocol=https; JMeter's HTTP samplers accept any certificate (its SSLManager trusts all)

    # plan-flow.jmx: a login sampler with a JSON Extractor into the thread's ${token}, then a Loop Controller of
    # relogin_every GETs (-1: forever) with an HTTP Header Manager sending it; the flow's fields are -J properties
    # (no file written). The samplers' labels ("login", "get", saved in the JTL) time the steps apart.
    login_flow = True

    def command(self, spec: RunSpec) -> list[str]:
        url = urlsplit(spec.url)
        port = url.port or (443 if url.scheme == "https" else 80)
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        if spec.flow is None:
            plan, target, fields = ("plan-rate.jmx" if spec.rate_rps else "plan.jmx"), [f"-Jpath={path}"], JTL_FIELDS
        else:
            f = spec.flow
            plan, fields = "plan-flow.jmx", {**JTL_FIELDS, "label": True}
            target = [f"-Jlogin_path={f.login_path}", f"-Jlogin_body={f.login_body}",
                      f"-Jlogin_content_type={f.login_content_type}", f"-Jtoken_field={f.token_field}",
                      f"-Jget_path={f.get_path}", f"-Jtoken_header={f.token_header}",
                      f"-Jrelogin_every={spec.relogin_every or -1}"]
        return [
            "java", *JVM, "-jar", f"{self.home}/bin/ApacheJMeter.jar",
            "-n", "-f", "-t", str(self.folder / plan),
            *([f"-Jrate={spec.rate_rps}"] if spec.rate_rps else []),
            *([] if spec.keepalive else ["-Jkeepalive=false"]),
            "-l", str(spec.out_dir / JTL), "-j", str(spec.out_dir / LOG),
            f"-Jthreads={spec.vus}", f"-Jduration={spec.duration_s}", f"-Jrampup={RAMP_UP_S}",
            f"-Jprotocol={url.scheme}", f"-Jhost={url.hostname}", f"-Jport={port}", *target,
            # keep each thread's connection open across its loop iterations, and for the whole run
            # (HttpClient4 otherwise retires a connection 60 s after it was opened)
            "-Jhttpclient.reset_state_on_thread_group_iteration=false",
            f"-Jhttpclient4.time_to_live={(spec.duration_s + 60) * 1000}",
            "-Jsampleresult.timestamp.start=true",
            "-Jjmeter.save.saveservice.output_format=csv", "-Jjmeter.save.saveservice.print_field_names=true",
            *(f"-Jjmeter.save.saveservice.{field}={'true' if keep else 'false'}" for field, keep in fields.items()),
        ]

    def parse(self, output: ToolOutput) -> Metrics:
        path = output.file(JTL)
        if not path.is_file():
            raise ParseError(f"JMeter wrote no per-sample log {JTL}")
        starts, elapsed, labels, errors, threads = [], [], [], 0, set()
        flow = output.spec.flow is not None
        with path.open(newline="", errors="replace") as handle:
            reader = csv.reader(handle)
            header = next(reader, [])
            needed = ("timeStamp", "elapsed", "success", "threadName", *(("label",) if flow else ()))
            missing = [c for c in needed if c not in header]
            if missing:
                raise ParseError(f"{JTL} lacks the columns {', '.join(missing)} (header {header!r})")
            at_start, at_elapsed, at_success, at_thread = (header.index(c) for c in needed[:4])
            # plan-flow.jmx's JTL saves the label (plain runs do not): its steps, whether or not the spec says flow
            flow = "label" in header
            at_label = header.index("label") if flow else None
            for row in reader:
                try:
                    starts.append(int(row[at_start]))
                    elapsed.append(int(row[at_elapsed]))
                    if at_label is not None:
                        labels.append(row[at_label])
                    errors += row[at_success] != "true"
                    threads.add(row[at_thread])
                except (IndexError, ValueError):
                    raise ParseError(f"{JTL} line {reader.line_num}: unreadable sample {row!r}"[:300]) from None
        if not elapsed:
            raise ParseError(f"{JTL} holds no samples")
        first, last = min(starts), max(map(sum, zip(starts, elapsed)))
        measured_s = (last - first) / 1000.0
        notes = [f"JVM heap: {' '.join(HEAP)} (JMeter's bin/jmeter defaults); GC: {' '.join(GC)}",
                 f"{len(threads)} threads sampled (VUs {output.spec.vus})",
                 f"threads start over the first {RAMP_UP_S} s (ramp-up), inside the load window"]
        steps, step_source = {}, ""
        if flow:
            for step, label in STEPS.items():
                m = latency_metrics([e for e, l in zip(elapsed, labels) if l == label])
                steps[f"lat_{step}_p50_ms"], steps[f"lat_{step}_p99_ms"] = m.lat_p50_ms, m.lat_p99_ms
            notes.append("flow samples: " + ", ".join(f"{n} {label}" for label, n in sorted(Counter(labels).items())))
            step_source = ("; a flow: the overall figures cover every sample (logins and GETs), lat_login_* and "
                           "lat_api_get_* the samples labelled \"login\" and \"get\" (the same percentile definition)")
        return latency_metrics(
            elapsed,
            requests=len(elapsed),
            errors=errors,
            rps=len(elapsed) / measured_s if measured_s > 0 else None,
            measured_s=measured_s,
            load_start_s=first / 1000.0 - output.launched_at if output.launched_at else None,
            source=(f"JMeter JTL CSV, one row per sample: latency = 'elapsed' (whole ms: JMeter records "
                    f"milliseconds, so sub-ms responses show as 0 or 1 ms), {DEFINITION}; errors = success=false; "
                    "load window = first sample's timeStamp (start) to the last sample's end; rps = samples / window; "
                    f"load_start_s = first timeStamp - launch; JVM {' '.join(HEAP)}{step_source}"),
            notes=notes,
            **steps,
        )
