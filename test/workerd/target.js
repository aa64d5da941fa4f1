// The subrequest's callee: the smallest response, so that what grows per subrequest comes from
// workerd's own per-request machinery rather than from the worker.
export default {
  async fetch() {
    return new Response("ok");
  },
};
