from phalanx.sim.events import EventKind, EventQueue


def test_equal_times_pop_finishes_then_arrivals_then_cycles_in_insertion_order() -> None:
    queue = EventQueue()
    queue.push(5.0, EventKind.CYCLE)
    queue.push(5.0, EventKind.ARRIVAL, "b")
    queue.push(5.0, EventKind.FINISH, "x")
    queue.push(5.0, EventKind.ARRIVAL, "a")
    queue.push(1.0, EventKind.ARRIVAL, "early")
    assert [e.job for e in queue.pop_batch()] == ["early"]
    batch = queue.pop_batch()
    assert [(e.kind, e.job) for e in batch] == [
        (EventKind.FINISH, "x"),
        (EventKind.ARRIVAL, "b"),
        (EventKind.ARRIVAL, "a"),
        (EventKind.CYCLE, ""),
    ]
    assert len(queue) == 0


def test_same_pushes_give_the_same_order() -> None:
    def order() -> list[str]:
        queue = EventQueue()
        for i in range(50):
            queue.push(float(i % 3), EventKind(i % 3), f"j{i}")
        return [queue.pop().job for _ in range(50)]

    assert order() == order()
