"""Admission, the first stage of a cycle: which groups may try to place pods this cycle, in
which order (`admit`), what each brings (`members`), queue usage (`queues`), and the gangs
left short by a failed write or a lost node (`partial`, `node_loss`)."""
