"""Who may do what: users and API keys (:mod:`.auth`), the web pages' passwords, sign-in sessions,
invites and CSRF tokens (:mod:`.sessions`), and the rate limits of writes and sign-ins kept in the
database (:mod:`.rate_limits`)."""
