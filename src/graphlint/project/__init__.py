"""Project-wide analysis: summaries per module (``summary``), reachability from
capture regions (``reach``) and the two-pass check that uses them (``check``)."""
