# The seed's workerd case: `main` answers GET /?n=N by making N sequential subrequests to
# `target` over a service binding.  The socket's address here is a placeholder: drive.py always
# hands workerd an already-bound loopback socket with `--socket-fd http=<fd>`, so no port is
# ever raced for and nothing listens beyond 127.0.0.1.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .mainWorker),
    (name = "target", worker = .targetWorker),
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:0", http = (), service = "main"),
  ],
);

const mainWorker :Workerd.Worker = (
  modules = [(name = "main.js", esModule = embed "main.js")],
  compatibilityDate = "2024-12-30",
  bindings = [(name = "TARGET", service = "target")],
);

const targetWorker :Workerd.Worker = (
  modules = [(name = "target.js", esModule = embed "target.js")],
  compatibilityDate = "2024-12-30",
);
