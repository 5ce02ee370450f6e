"""``streamlit run app.py``: the dashboard packaged in ``mmbright_core/ui/app.py``.

Installed from a wheel, ``mmbright app`` starts the same app with the same settings.
"""

from mmbright_core.ui.app import main

main()
