"""Reading a question in English into constraints the SQL can be checked against (issue 12,
part 1): its filters (:mod:`.filters`) and its shape (:mod:`.shape`)."""
