"""The engine: checked policy -> compiled policy -> verdict, on durable_rules.

    lowering, simplify   conditions -> durable_rules JSON over a projected fact
    build                the compile stages after the checks: lower, build
    compiled             what the evaluator runs on (plain, picklable data)
    durable              the durable_rules boundary: assert, collect matches, retract
    slow_encode          the engine's JSON for a float with a bare exponent (encode's slow path)
    projection           how each projected slot is written for the engine
    verdict              Verdict and Match: what an evaluation gives
    evaluator            validate -> project -> match -> decide -> render
    batches              evaluating a batch: the backend's runner per thread and its plan
    matches              what a fact matches, winner first, and its projection (explaining it)
    json_projector       the projector a run of many facts generates (one pass, straight-line code)
    plan                 the typed plan a faster backend is built from (Evaluator.plan)
    protocols            the seams: Backend (plan -> Runner) and Runner (fact -> Verdict)
    backends             which backend evaluates batches (select_backend; the stoprule.backends plug-ins)
    speedups             the optional C accelerator behind the evaluator (same verdicts, faster);
                         _speedups.pyi types its native Runner's arguments
    interpret            the reference interpreter (conditions evaluated directly)
    packs                finding a pack and loading it compiled, through a cache

On the cold path (tools/import_graph.py): its imports stay few, light and lazy.
"""
