"""The labs: snippets/<page>/<name>.py, one folder per page of the site."""
