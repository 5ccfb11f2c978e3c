"""A case's config items spread over several jobs (`tileiropt.validate.shards`): who runs which item, how many jobs
a case becomes, when its input key is complete, and that the jobs' records together are the one job's."""

from __future__ import annotations

import shutil
from pathlib import Path

from tileiropt.validate.shards import MAX_SHARDS, ShardCount, compile_cost, owners, shard_count, split_cases

from shared import cpu_machine

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_items_of_their_own_are_dealt_round_robin_and_a_repeat_goes_with_what_it_repeats() -> None:
    # items 2 and 4 repeat items 0 and 1 (the same compiled code on this backend)
    owner = owners(6, {2: 0, 4: 1}, 2)
    assert owner[2] == owner[0] and owner[4] == owner[1]
    assert sorted(owner[i] for i in (0, 1, 3, 5)) == [0, 0, 1, 1]  # the four items of their own, two each
    assert owner == owners(6, {2: 0, 4: 1}, 2)  # the same every time
    assert owners(6, {2: 0, 4: 1}, 1) == [0] * 6
    assert sorted(owners(3, {}, 4)) == [0, 1, 2]  # more jobs than items: the last ones run none
    periodic = owners(60, {}, 3)  # a list with a period of 3: each job gets a share of every phase
    assert all(len({periodic[i] for i in range(phase, 60, 3)}) == 3 for phase in range(3))


def test_the_costliest_configs_go_first_one_to_a_job() -> None:
    costs = [compile_cost({"BLOCK_M": m, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP": 8}, warps)
             for m, warps in [(64, 4), (256, 2), (64, 8), (128, 4), (256, 8), (16, 4)]]
    assert costs[1] == 256 * 128 / 2  # the two largest block sizes per warp (GROUP=8 is no block size)
    assert costs[5] == 128 * 32 / 4
    owner = owners(6, {}, 3, costs)
    by_cost = sorted(range(6), key=lambda i: -costs[i])
    assert [owner[i] for i in by_cost[:3]] == [0, 1, 2]  # the shards that start first take the costliest
    assert [owner[i] for i in by_cost[3:]] == [2, 1, 0]  # the next round dealt the other way
    assert owner == owners(6, {}, 3, costs)  # the same every time
    assert owners(4, {2: 0}, 2, [1.0, 5.0, 9.0, 3.0])[2] == owners(4, {2: 0}, 2, [1.0, 5.0, 9.0, 3.0])[0]


def test_a_case_is_split_only_where_the_cases_leave_slots_idle() -> None:
    assert shard_count(candidates=1, slots=8, cases=3) == 32  # one autotuned case, 3 cases, 8 slots: 4 a slot
    assert shard_count(candidates=2, slots=8, cases=3) == 16
    assert shard_count(candidates=1, slots=64, cases=1) == MAX_SHARDS
    assert shard_count(candidates=1, slots=8, cases=8) == 1  # the cases fill the slots already
    assert shard_count(candidates=0, slots=8, cases=1) == 1
    assert shard_count(candidates=1, slots=1, cases=1) == 1


def test_split_jobs_keep_the_case_and_count_to_one_complete_key() -> None:
    from tileiropt.validate.cases import Case

    case = Case(id=3, kernel="k", variant="original", path="k.py", entry="k", reference="x", shapes={},
                dtypes={}, atol=0.0, rtol=0.0)
    jobs, part_of = split_cases([case], 3, first_id=10)
    assert [(j.id, j.shard, j.shards) for j in jobs] == [(3, 0, 3), (10, 1, 3), (11, 2, 3)]
    assert part_of == {10: 3, 11: 3} and all(j.kernel == "k" for j in jobs)
    count = ShardCount([("key", 3), ("alone", 1)])
    assert [count.ended("key", True), count.ended("key", True), count.ended("key", True)] == [False, False, True]
    assert count.ended("alone", True)
    cut = ShardCount([("key", 2)])
    assert not cut.ended("key", False) and not cut.ended("key", True)  # one job cut short: never complete


def test_the_jobs_of_a_split_case_record_what_one_job_records(tmp_path: Path) -> None:
    """The example matmul's case on the TileIR code forced on under the interpreter, run whole and as two jobs."""
    from tileiropt.harness.backends import BACKENDS
    from tileiropt.harness.provenance import Provenance
    from tileiropt.project.file import load_project
    from tileiropt.validate.run import plan_cases
    from tileiropt.validate.worker import CaseRunner

    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns(".tileiropt", "__pycache__"))
    project = load_project(tmp_path / "examples" / "tileiropt.toml")
    backend = BACKENDS["interpret"]
    plan = plan_cases(project, project.select(["matmul"]), [backend], cpu_machine(), ["original"], 60)
    (case,) = plan.cases[backend.name]

    def run(shard: int, shards: int) -> dict[int, tuple[str, str]]:
        events: list[tuple[str, dict]] = []
        job = type(case)(**{**vars(case), "shard": shard, "shards": shards})
        assert CaseRunner(job, backend, False, Provenance(), lambda kind, **e: events.append((kind, e))).run()
        return {e["item"]: (e["record"]["config"], e["record"]["status"]) for kind, e in events if kind == "record"}

    whole = run(0, 1)
    first, second = run(0, 2), run(1, 2)
    assert len(whole) > 2 and first and second and not set(first) & set(second)
    assert {**first, **second} == whole


def test_the_plan_spreads_autotuned_cases_on_gpu_backends_only(tmp_path: Path) -> None:
    from tileiropt.harness.backends import BACKENDS
    from tileiropt.validate.cases import Case
    from tileiropt.validate.run import Plan, spread_cases

    tuned, plain = tmp_path / "tuned.py", tmp_path / "plain.py"
    tuned.write_text("@triton.autotune(configs=[], key=[])\n")
    plain.write_text("@triton.jit\n")

    def case(id_: int, path: Path) -> Case:
        return Case(id=id_, kernel=path.stem, variant="original", path=str(path), entry="k", reference="x",
                    shapes={}, dtypes={}, atol=0.0, rtol=0.0)

    ptx, interpret = BACKENDS["ptx"], BACKENDS["interpret"]
    plan = Plan(cases={"ptx": [case(0, tuned), case(1, plain)], "interpret": [case(2, tuned)]},
                timeouts={0: 5.0, 1: 5.0, 2: 5.0}, keys={0: (0,), 1: (1,), 2: (2,)}, inputs={0: "a", 1: "b", 2: "c"})
    count = spread_cases(plan, [ptx, interpret], slots=4, has_gpu=True)  # 3 cases on 4 slots: 4 jobs a slot
    assert [(c.kernel, c.shard, c.shards) for c in plan.cases["ptx"]] == [
        *(("tuned", shard, 16) for shard in range(16)), ("plain", 0, 1)]
    assert [c.shards for c in plan.cases["interpret"]] == [1]  # the interpreter's case stays whole
    new = [c.id for c in plan.cases["ptx"][1:16]]
    assert all(plan.inputs[i] == "a" and plan.keys[i] == (0,) and plan.timeouts[i] == 5.0 for i in new)
    assert [count.ended("a", True) for _ in range(16)] == [False] * 15 + [True]
    assert count.ended("b", True)
    unsplit = Plan(cases={"ptx": [case(0, tuned)]}, timeouts={0: 5.0}, keys={0: (0,)}, inputs={0: "a"})
    spread_cases(unsplit, [ptx], slots=6, has_gpu=False)  # no GPU: nothing runs it here anyway
    assert [c.shards for c in unsplit.cases["ptx"]] == [1]
