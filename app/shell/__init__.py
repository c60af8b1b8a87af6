"""What every served page is built in: the template (a11y), the header and page layout (page), the
address bar, links and share buttons (share), and the front page (landing). Panel only."""
