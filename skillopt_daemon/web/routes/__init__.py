"""The dashboard's pages, one router per page of the navigation (and its actions)."""
