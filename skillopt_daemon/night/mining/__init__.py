"""The night's first phase: mining the user's recurring work from stored sessions into task families."""
