use super::*;

fn launched(vars: &[(&str, &str)]) -> Result<Option<LaunchedRank>, Error> {
    launched_rank(|name| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string())
    })
}

fn rank(vars: &[(&str, &str)]) -> LaunchedRank {
    launched(vars).unwrap().expect("a launched rank")
}

fn refusal(vars: &[(&str, &str)]) -> String {
    launched(vars).unwrap_err().to_string()
}

#[test]
fn torchrun_gives_rank_world_and_master_address() {
    let me = rank(&[
        ("RANK", "1"),
        ("WORLD_SIZE", "2"),
        ("LOCAL_RANK", "1"),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", "29400"),
    ]);
    assert_eq!(me.launcher, Launcher::Torchrun);
    assert_eq!((me.rank, me.world_size, me.local_rank), (1, 2, Some(1)));
    assert_eq!(me.rendezvous.to_string(), "127.0.0.1:29400");
    assert_eq!(me.rendezvous.from, "MASTER_ADDR, MASTER_PORT");
}

#[test]
fn under_torchruns_agent_the_rendezvous_is_one_port_above_its_store() {
    let vars = [
        ("RANK", "0"),
        ("WORLD_SIZE", "4"),
        ("MASTER_ADDR", "node-a"),
        ("MASTER_PORT", "29500"),
        ("TORCHELASTIC_USE_AGENT_STORE", "True"),
    ];
    assert_eq!(rank(&vars).rendezvous.to_string(), "node-a:29501");
    let chosen = [&vars[..], &[(RENDEZVOUS_PORT, "40000")]].concat();
    assert_eq!(rank(&chosen).rendezvous.to_string(), "node-a:40000");
}

#[test]
fn mpirun_on_one_host_meets_on_this_host_and_across_hosts_needs_master_addr() {
    let one_host = rank(&[
        ("OMPI_COMM_WORLD_RANK", "0"),
        ("OMPI_COMM_WORLD_SIZE", "2"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
        ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
    ]);
    assert_eq!(one_host.launcher, Launcher::OpenMpi);
    assert_eq!(one_host.rendezvous.to_string(), "127.0.0.1:29500");
    let several = refusal(&[
        ("PMI_RANK", "3"),
        ("PMI_SIZE", "4"),
        ("MPI_LOCALNRANKS", "2"),
    ]);
    assert!(
        several.starts_with("MASTER_ADDR is not set, and MPICH's"),
        "{several}"
    );
    let named = rank(&[
        ("PMI_RANK", "3"),
        ("PMI_SIZE", "4"),
        ("MASTER_ADDR", "fe80::1"),
        ("MASTER_PORT", "7000"),
    ]);
    assert_eq!(named.launcher, Launcher::Pmi);
    assert_eq!(named.rendezvous.to_string(), "[fe80::1]:7000");
}

#[test]
fn slurm_meets_at_the_first_host_of_the_step() {
    let me = rank(&[
        ("SLURM_PROCID", "5"),
        ("SLURM_NTASKS", "8"),
        ("SLURM_LOCALID", "1"),
        ("SLURM_STEP_NODELIST", "gpu[07-10,12],login1"),
    ]);
    assert_eq!(me.launcher, Launcher::Slurm);
    assert_eq!(me.rendezvous.to_string(), "gpu07:29500");
    assert_eq!(me.local_rank, Some(1));
    // A batch script (no step) is no rank.
    assert_eq!(
        launched(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "8")]).unwrap(),
        None
    );
}

#[test]
fn the_innermost_launcher_wins() {
    let me = rank(&[
        ("RANK", "2"),
        ("WORLD_SIZE", "4"),
        ("MASTER_ADDR", "h"),
        ("MASTER_PORT", "1"),
        ("OMPI_COMM_WORLD_RANK", "0"),
        ("OMPI_COMM_WORLD_SIZE", "2"),
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "2"),
        ("SLURM_STEP_NODELIST", "n1"),
    ]);
    assert_eq!((me.launcher, me.rank), (Launcher::Torchrun, 2));
}

proptest::proptest! {
    #[test]
    fn any_values_are_a_rank_a_local_process_or_an_error(
        values in proptest::collection::vec(
            proptest::option::of("[0-9]{0,3}|.{0,12}"),
            10,
        ),
    ) {
        let names = [
            "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
            "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID",
            "SLURM_NTASKS", "SLURM_STEP_NODELIST",
        ];
        let result = launched_rank(|name| {
            names.iter().position(|n| *n == name).and_then(|i| values[i].clone())
        });
        if let Ok(Some(me)) = result {
            proptest::prop_assert!(me.rank < me.world_size && me.world_size > 1);
            proptest::prop_assert!(me.rendezvous.port > 0 && !me.rendezvous.host.is_empty());
        }
    }
}

#[test]
fn a_world_larger_than_rank_0_can_gather_is_refused() {
    // Rank 0 keeps a slot per rank: a mistyped WORLD_SIZE must not become its allocation.
    let message = refusal(&[
        ("RANK", "0"),
        ("WORLD_SIZE", "10000000000"),
        ("MASTER_ADDR", "h"),
        ("MASTER_PORT", "29500"),
    ]);
    assert!(
        message.starts_with("WORLD_SIZE = 10000000000: more ranks than"),
        "{message}"
    );
    let largest = MAX_WORLD_SIZE.to_string();
    let me = rank(&[
        ("SLURM_PROCID", "1"),
        ("SLURM_NTASKS", &largest),
        ("SLURM_STEP_NODELIST", "n1"),
    ]);
    assert_eq!(me.world_size, MAX_WORLD_SIZE);
}

#[test]
fn an_unusable_local_rank_or_local_size_is_refused_naming_it() {
    let torchrun = [
        ("RANK", "1"),
        ("WORLD_SIZE", "2"),
        ("MASTER_ADDR", "h"),
        ("MASTER_PORT", "29500"),
    ];
    let bad = [&torchrun[..], &[("LOCAL_RANK", "one")]].concat();
    let message = refusal(&bad);
    assert!(
        message.starts_with("LOCAL_RANK = 'one' is not a non-negative integer (torchrun)"),
        "{message}"
    );
    let message = refusal(&[
        ("OMPI_COMM_WORLD_RANK", "0"),
        ("OMPI_COMM_WORLD_SIZE", "2"),
        ("OMPI_COMM_WORLD_LOCAL_SIZE", "-2"),
    ]);
    assert!(
        message.starts_with("OMPI_COMM_WORLD_LOCAL_SIZE = '-2' is not a non-negative integer"),
        "{message}"
    );
    let blank = [&torchrun[..], &[("LOCAL_RANK", " ")]].concat();
    assert_eq!(rank(&blank).local_rank, None);
}

#[test]
fn nothing_or_a_world_of_one_is_local() {
    assert_eq!(launched(&[]).unwrap(), None);
    assert_eq!(
        launched(&[("RANK", "0"), ("WORLD_SIZE", "1")]).unwrap(),
        None
    );
}

#[test]
fn unusable_values_are_refused_naming_the_variable() {
    let base = [("MASTER_ADDR", "h"), ("MASTER_PORT", "29500")];
    let cases: [(&[(&str, &str)], &str); 8] = [
        (
            &[("RANK", "1")],
            "WORLD_SIZE is not set, though RANK is: torchrun sets both",
        ),
        (
            &[("WORLD_SIZE", "2")],
            "RANK is not set, though WORLD_SIZE is",
        ),
        (
            &[("RANK", "x"), ("WORLD_SIZE", "2")],
            "RANK = 'x' is not a non-negative integer",
        ),
        (
            &[("RANK", "2"), ("WORLD_SIZE", "2")],
            "RANK = 2 but WORLD_SIZE = 2: ranks run from 0 to 1",
        ),
        (&[("RANK", "0"), ("WORLD_SIZE", "0")], "WORLD_SIZE = 0"),
        (
            &[("RANK", "99999999999999999999"), ("WORLD_SIZE", "2")],
            "RANK = '99999999999999999999'",
        ),
        (
            &[
                ("OMPI_COMM_WORLD_RANK", "-1"),
                ("OMPI_COMM_WORLD_SIZE", "2"),
            ],
            "OMPI_COMM_WORLD_RANK = '-1'",
        ),
        (
            &[("SLURM_PROCID", "0"), ("SLURM_STEP_NODELIST", "n1")],
            "SLURM_NTASKS is not set",
        ),
    ];
    for (vars, expected) in cases {
        let vars = [vars, &base[..]].concat();
        let message = refusal(&vars);
        assert!(message.starts_with(expected), "{vars:?}: {message}");
    }
    let slurm = [
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "2"),
        ("SLURM_STEP_NODELIST", "n[1-"),
    ];
    assert!(refusal(&slurm).starts_with("SLURM_STEP_NODELIST = 'n[1-' is not a Slurm host list"));
    let torchrun = [("RANK", "0"), ("WORLD_SIZE", "2")];
    assert!(refusal(&torchrun).starts_with("MASTER_ADDR is not set"));
    let no_port = [&torchrun[..], &[("MASTER_ADDR", "h")]].concat();
    assert!(refusal(&no_port).starts_with("MASTER_PORT is not set"));
    for port in ["0", "65536", "http"] {
        let bad = [
            &torchrun[..],
            &[("MASTER_ADDR", "h"), ("MASTER_PORT", port)],
        ]
        .concat();
        let message = refusal(&bad);
        assert!(
            message.starts_with(&format!("MASTER_PORT = '{port}' is not a port")),
            "{message}"
        );
    }
}
