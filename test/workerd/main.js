// GET /?n=N: N sequential subrequests to the target worker, each body read to the end, so that
// every subrequest's objects are created and released before the next one starts.  Answers the
// number of subrequests completed; the driver checks it.
const MAX_N = 10000;

export default {
  async fetch(request, env) {
    const raw = new URL(request.url).searchParams.get("n") ?? "1";
    if (!/^[0-9]+$/.test(raw) || Number(raw) > MAX_N) {
      return new Response(`n must be an integer in 0..${MAX_N}\n`, { status: 400 });
    }
    const n = Number(raw);
    let done = 0;
    for (let i = 0; i < n; i++) {
      const response = await env.TARGET.fetch("http://target/");
      const body = await response.text();
      if (body !== "ok") {
        return new Response(`subrequest ${i} answered ${JSON.stringify(body)}\n`, { status: 502 });
      }
      done++;
    }
    return new Response(String(done));
  },
};
