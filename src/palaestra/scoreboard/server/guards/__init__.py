"""What stands in front of every route: the problem answers of faults (outage), body limits, anonymous
read limits, read-only mode and free space. Guards may draw the error page (the page templates'
environment, ``web/render.py``) but never a page's content."""
