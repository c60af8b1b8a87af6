"""Panel 1, the admission decision: `panel serve app/pages/admission.py`."""

from kvlab.app.shell.page import build_page
from kvlab.app.views.panels import AdmissionPanel

build_page(AdmissionPanel, "Pick a model and a GPU, then push the prompt length up and watch what stops the batch.").servable()
