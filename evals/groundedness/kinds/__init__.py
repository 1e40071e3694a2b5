"""The kinds of evidence items the groundedness corpus is drawn from, by source."""
