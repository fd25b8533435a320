"""Who may do what: users and API keys (:mod:`.auth`), the web pages' passwords, sign-in sessions,
invites and CSRF tokens (:mod:`.sessions`), and the rate limits of writes kept in the database
(:mod:`.rate_limits`; failed sign-ins per address and per address and name: :mod:`.sign_in_limits`)."""
