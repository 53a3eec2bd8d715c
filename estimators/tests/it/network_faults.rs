//! A two-task MultiWorkerMirrored cluster across a real network link — two network
//! namespaces joined by a veth pair — with faults injected: training completes over a
//! degraded link (`tc netem` latency and loss where the kernel has netem, a `tbf` rate limit
//! and 1 % of packets dropped by iptables otherwise), and a partition (the link down: packets vanish, no reset) is detected within
//! the peer timeout, each side naming the other. Needs root (`ip netns`, `tc`); skipped
//! with a message elsewhere.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use estimator::checkpoint::CheckpointManager;

use crate::cli::train_on_iris;
use crate::cluster::{dnn_classifier, error_line, wait_for_checkpoint, wait_until, Reaper, LIMIT};

/// Two namespaces joined by a veth pair, removed (with their links) when dropped.
struct Link {
    names: [String; 2],
    devices: [String; 2],
    addresses: [String; 2],
}

fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    match output.status.success() {
        true => Ok(()),
        false => Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

impl Link {
    fn new() -> Result<Link, String> {
        let id = std::process::id() % 10_000;
        let subnet = 10 + id % 200;
        let link = Link {
            names: [format!("est-a-{id}"), format!("est-b-{id}")],
            devices: [format!("vea{id}"), format!("veb{id}")],
            addresses: [format!("10.231.{subnet}.1"), format!("10.231.{subnet}.2")],
        };
        for ns in &link.names {
            ip(&["netns", "add", ns])?;
        }
        let [a, b] = &link.devices;
        ip(&["link", "add", a, "type", "veth", "peer", "name", b])?;
        for i in 0..2 {
            let (ns, dev) = (&link.names[i], &link.devices[i]);
            ip(&["link", "set", dev, "netns", ns])?;
            let address = format!("{}/24", link.addresses[i]);
            ip(&["-n", ns, "addr", "add", &address, "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(link)
    }

    /// The qdisc `settings` (`netem delay 5ms loss 1%`) at the root of both ends.
    fn qdisc(&self, settings: &str) -> Result<(), String> {
        for i in 0..2 {
            let mut args = vec!["netns", "exec", &self.names[i], "tc", "qdisc", "replace"];
            args.extend(["dev", self.devices[i].as_str(), "root"]);
            args.extend(settings.split(' '));
            ip(&args)?;
        }
        Ok(())
    }

    /// Latency and loss where the kernel has netem; else a rate limit, with loss from
    /// iptables' `statistic` match where it works. What was applied.
    fn degrade(&self) -> String {
        const LOSSY: &str = "netem delay 5ms loss 1%";
        const SLOW: &str = "tbf rate 2mbit burst 32kbit latency 100ms";
        if let Err(why) = self.qdisc(LOSSY) {
            println!("netem is not available ({why}); degrading the link with {SLOW}");
            self.qdisc(SLOW).unwrap();
            return match self.iptables(
                &["-A", "INPUT", "-m", "statistic", "--mode", "random"]
                    .into_iter()
                    .chain(["--probability", "0.01", "-j", "DROP"])
                    .collect::<Vec<_>>(),
            ) {
                Ok(()) => format!("{SLOW} and 1% of packets dropped by iptables"),
                Err(why) => {
                    println!("no packet loss either: iptables cannot drop packets ({why})");
                    SLOW.to_string()
                }
            };
        }
        LOSSY.to_string()
    }

    /// Runs `iptables args` in both namespaces.
    fn iptables(&self, args: &[&str]) -> Result<(), String> {
        for ns in &self.names {
            let mut all = vec!["netns", "exec", ns.as_str(), "iptables"];
            all.extend_from_slice(args);
            ip(&all)?;
        }
        Ok(())
    }

    /// Packets the dropping rules of both namespaces dropped.
    fn dropped(&self) -> u64 {
        self.names
            .iter()
            .map(|ns| {
                let output = Command::new("ip")
                    .args([
                        "netns", "exec", ns, "iptables", "-L", "INPUT", "-v", "-n", "-x",
                    ])
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&output.stdout)
                    .lines()
                    .filter(|line| line.contains("DROP"))
                    .filter_map(|line| line.split_whitespace().next()?.parse::<u64>().ok())
                    .sum::<u64>()
            })
            .sum()
    }

    /// The link as it was made: no qdisc settings, no dropping rule.
    fn restore(&self) {
        self.qdisc("pfifo").unwrap();
        let _ = self.iptables(&["-F", "INPUT"]);
    }

    /// Cuts the link: task 0's end goes down, and packets vanish without a reset.
    fn cut(&self) {
        ip(&[
            "-n",
            &self.names[0],
            "link",
            "set",
            &self.devices[0],
            "down",
        ])
        .unwrap();
    }

    /// Starts task `i` (0: chief, 1: worker) in its namespace.
    fn start(&self, i: usize, model_dir: &Path, logs: &Path, max_steps: &str) -> Child {
        let cluster = format!(
            r#""cluster": {{"chief": ["{}:7301"], "worker": ["{}:7301"]}}"#,
            self.addresses[0], self.addresses[1]
        );
        let (kind, name) = [("chief", "chief:0"), ("worker", "worker:0")][i];
        let tf_config = format!(r#"{{{cluster}, "task": {{"type": "{kind}", "index": 0}}}}"#);
        Command::new("ip")
            .args(["netns", "exec", &self.names[i], dnn_classifier()])
            .args(train_on_iris())
            .args(["--max-steps", max_steps, "--save-checkpoints-steps", "50"])
            .args(["--hidden-units", "16", "--peer-timeout-secs", "5"])
            .arg("--model-dir")
            .arg(model_dir)
            .env("TF_CONFIG", tf_config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(logs.join(format!("{name}.err"))).unwrap())
            .spawn()
            .unwrap()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        for ns in &self.names {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// The link, or `None` (with the reason printed) where namespaces cannot be made.
fn link() -> Option<Link> {
    match Link::new() {
        Ok(link) => Some(link),
        Err(why) => {
            println!("skipped: network namespaces are not permitted here ({why})");
            None
        }
    }
}

fn log(logs: &Path, task: &str) -> String {
    std::fs::read_to_string(logs.join(format!("{task}.err"))).unwrap_or_default()
}

#[test]
fn training_completes_under_latency_and_loss_and_a_partition_is_named_within_the_timeout() {
    let Some(link) = link() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path();

    // A degraded link (latency and loss, or a low rate): training completes.
    let degraded = link.degrade();
    let model_dir = dir.path().join("lossy");
    let mut cluster = Reaper(
        (0..2)
            .map(|i| link.start(i, &model_dir, logs, "200"))
            .collect(),
    );
    for (i, task) in ["chief:0", "worker:0"].iter().enumerate() {
        let status = wait_until(&mut cluster.0[i], Instant::now() + LIMIT)
            .unwrap_or_else(|| panic!("{task} still running:\n{}", log(logs, task)));
        assert!(status.success(), "{task}: {status}\n{}", log(logs, task));
    }
    let manager = CheckpointManager::new(&model_dir, None);
    assert_eq!(manager.latest_step().unwrap(), Some(200), "over {degraded}");
    if degraded.contains("iptables") {
        let dropped = link.dropped();
        assert!(dropped > 0, "iptables dropped no packet");
        println!("over {degraded}: {dropped} packets dropped, training completed");
    }

    // A partition: every packet dropped, no reset. Both sides notice within the timeout.
    link.restore();
    let model_dir = dir.path().join("partitioned");
    let mut cluster = Reaper(
        (0..2)
            .map(|i| link.start(i, &model_dir, logs, "100000000"))
            .collect(),
    );
    wait_for_checkpoint(&model_dir, 100, || log(logs, "chief:0"));
    link.cut();
    let cut = Instant::now();
    for (i, (task, other)) in [("chief:0", "worker:0"), ("worker:0", "chief:0")]
        .iter()
        .enumerate()
    {
        let status = wait_until(&mut cluster.0[i], cut + Duration::from_secs(5 * 3 / 2 + 3))
            .unwrap_or_else(|| panic!("{task} still running after the partition"));
        let err = log(logs, task);
        assert!(status.code().unwrap_or(0) >= 128, "{task}: {status}\n{err}");
        let error = error_line(&err, "");
        assert!(error.contains(&format!("lost {other}")), "{task}: {error}");
        println!("{task} after {:.1?}: {error}", cut.elapsed());
    }
}
