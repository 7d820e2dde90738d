"""The client impact report's side effects: the bookkeeping records read, the HTML page drawn and written."""
